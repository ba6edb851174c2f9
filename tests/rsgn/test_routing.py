"""The routing options of the sparse RSGN (per-step readout, straight-through threshold) and the
gradient-flow diagnostics (issue 30)."""
import math

import pytest
import torch

import hebbnets as hn
from hebbnets._model import DataSpec
from hebbnets.rsgn.diagnostics import gradient_flow
from hebbnets.rsgn.model import RSGN, RSGNConfig


def _data(n=48, t=12, d=6, c=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, t, d, generator=g)
    y = torch.arange(n) % c
    x[torch.arange(n), 0, :c] += 2.0 * torch.nn.functional.one_hot(y, c).float()
    return hn.Split(x, y)


def _loss(o):
    # a fixed random projection: a plain sum is blind to LayerNorm'd states (their entries sum to 0)
    r = torch.randn(o.shape[1], generator=torch.Generator().manual_seed(1), dtype=o.dtype)
    return (o * r).sum()


def _built(seed=0, dtype=torch.float64, **cfg):
    base = dict(n_nodes=64, k=6, d_hidden=8, n_steps=3, ignite_frac=0.06, progress=False)
    m = RSGN(RSGNConfig(**{**base, **cfg}), seed=seed)
    torch.manual_seed(seed)
    m.spec = DataSpec((12, 6), (), 4)
    m._build(m.spec)
    m = m.to(dtype)
    with torch.no_grad():  # pruned edges, non-trivial affinities, a temperature that lets gradients through
        m.alive[::3, 1] = False
        m.affinity.normal_(0, 1)
        m.temperature.fill_(0.5)
    return m


@pytest.mark.parametrize("readout", ["all", "last", "steps"])
@pytest.mark.parametrize("mode", ["sparse", "dense"])
def test_surrogate_changes_no_value_only_gradients(readout, mode):
    x = _data().x[:6].double()
    outs, grads = [], []
    for surrogate in (False, True):
        m = _built(readout=readout, surrogate=surrogate).train()
        tok = m._tokens(x, None)
        o, trace = m.propagate(tok, mode)
        outs.append((o, trace))
        grads.append(torch.autograd.grad(_loss(o), list(m.spark.parameters())))
    (o0, t0), (o1, t1) = outs
    assert torch.equal(o0, o1)  # exactly the same values: ghost activities are exact zeros
    for a, b in zip(t0, t1):
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    # the straight-through gradient adds a contribution through the zeroed candidates' g
    assert any(not torch.allclose(a, b) for a, b in zip(*grads))


def test_surrogate_gradient_is_the_readout_derivative_at_zero_activity():
    # readout "all": o_b = num_b / (den_b + eps); a zeroed candidate j of sample b entering with
    # activity a_j = 0 has d(r . o_b) / d a_j = r . (h_j - o_b) / (den_b + eps), and
    # by the straight-through rule d a_j / d g_j = 1
    m = _built(readout="all", surrogate=True).train()
    tok = m._tokens(_data().x[:6].double(), None)
    states = []
    o, _ = m.propagate(tok, "sparse", states=states)
    den = sum(torch.zeros(6, dtype=o.dtype).index_add(0, st["idx"] // 64, st["alpha"]) for st in states)
    ghosts = [st["ghost"] for st in states if st["ghost"] is not None and st["ghost"][0].numel()]
    assert ghosts  # not vacuous
    g_idx, g_a, g_h = ghosts[0]
    r = torch.randn(o.shape[1], generator=torch.Generator().manual_seed(1), dtype=o.dtype)
    (got,) = torch.autograd.grad(_loss(o), g_a, retain_graph=True)
    b = g_idx // 64
    want = ((g_h - o[b]) @ r) / (den[b] + 1e-6)
    torch.testing.assert_close(got, want.detach(), rtol=1e-9, atol=1e-12)
    assert torch.equal(g_a, torch.zeros_like(g_a))


def test_sparse_and_dense_agree_with_the_new_options():
    for cfg in (dict(readout="steps"), dict(surrogate=True), dict(surrogate=True, readout="steps"),
                dict(surrogate=True, readout="last")):
        m = _built(**cfg).train()
        tok = m._tokens(_data().x[:5].double(), None)
        params = [*m.transform.parameters(), m.embed.weight, *m.spark.parameters()]
        o_s, _ = m.propagate(tok, "sparse")
        g_s = torch.autograd.grad(_loss(o_s), params)
        o_d, _ = m.propagate(tok, "dense")
        g_d = torch.autograd.grad(_loss(o_d), params)
        torch.testing.assert_close(o_s, o_d, rtol=1e-10, atol=1e-10)
        for a, b in zip(g_s, g_d):
            torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10)


def test_steps_readout_is_one_pooled_vector_per_step():
    m = _built(readout="steps").eval()
    tok = m._tokens(_data().x[:5].double(), None)
    states = []
    with torch.no_grad():
        o, trace = m.propagate(tok, "sparse", states=states)
    S, dh = m.config.n_steps, m.config.d_hidden
    assert o.shape == (5, dh * (S + 1)) and m.head.in_features == dh * (S + 1)
    for s, st in enumerate(states):  # block s = the activity-weighted mean state of step s
        num = torch.zeros(5, dh, dtype=o.dtype).index_add(0, st["idx"] // 64, st["alpha"][:, None] * st["h"])
        den = torch.zeros(5, dtype=o.dtype).index_add(0, st["idx"] // 64, st["alpha"])
        torch.testing.assert_close(o[:, s * dh:(s + 1) * dh], num / (den[:, None] + 1e-6))
    # the default readout pools the same sums over every step
    m_all = _built(readout="all").eval()
    with torch.no_grad():
        o_all, _ = m_all.propagate(tok, "sparse")
    assert o_all.shape == (5, dh)


def test_new_options_fit_predict_and_reject_bad_values():
    split = _data()
    for cfg in (dict(readout="steps"), dict(surrogate=True)):
        m = hn.models.make("rsgn", n_nodes=64, k=6, d_hidden=8, n_steps=2, epochs=2, batch_size=16, progress=False,
                           **cfg).fit(split)
        assert m.predict(split.x).shape == (len(split),)
    with pytest.raises(ValueError, match="surrogate"):
        RSGNConfig(surrogate=1)
    with pytest.raises(ValueError, match="readout"):
        RSGNConfig(readout="mean")
    m = _built()
    with pytest.raises(ValueError, match="states"):
        m.propagate(m._tokens(_data().x[:2].double(), None), "dense", states=[])


def test_gradient_flow_measures_every_step():
    split = _data(n=96)
    m = hn.models.make("rsgn", n_nodes=64, k=6, d_hidden=8, n_steps=3, epochs=2, batch_size=16, progress=False,
                       t_end=0.5).fit(split)
    t_before = float(m.temperature)
    out = gradient_flow(m, split, split, temperatures=(1.0, 0.1), max_samples=64)
    assert out["steps"] == 4 and len(out["probe"]) == 4
    flow = out["at_model"]
    for key in ("active", "grad_state", "grad_rows", "grad_alpha", "readout_share", "gate_slope", "cut"):
        assert len(flow[key]) == 4
    assert math.isnan(flow["gate_slope"][0]) and math.isnan(flow["cut"][0])  # ignition has no threshold
    assert abs(sum(flow["readout_share"]) - 1.0) < 1e-6
    assert flow["grad_state"][0] > 0 and all(0.0 <= v <= 1.0 for v in flow["cut"][1:])
    assert all(0.0 <= a <= 1.0 for a in out["probe"])
    assert set(out["at"]) == {"1", "0.1"} and float(m.temperature) == t_before  # temperature put back
    # a higher temperature flattens the soft threshold: its slope g (1 - g) / T is lower
    assert out["at"]["1"]["gate_slope"][1] < out["at"]["0.1"]["gate_slope"][1]
    with pytest.raises(ValueError, match="model"):
        gradient_flow(hn.models.make("rsgn"), split, split)
    with pytest.raises(ValueError, match="temperatures"):
        gradient_flow(m, split, split, temperatures=(0.0,))
    with pytest.raises(ValueError, match="max_samples"):
        gradient_flow(m, split, split, max_samples=0)
