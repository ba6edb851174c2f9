"""``RSGNEncoder``: shapes on every device, gradients to its fast parameters only, exact zeros where
the sparse model's math says zero, determinism under a seed, the slow rules as explicit calls,
and bad input."""
import math

import pytest
import torch

import hebbnets.nn as hnn

SMALL = dict(n_nodes=64, d_hidden=16, n_steps=3, k=8)


def _encoder(seed=0, **kw) -> hnn.RSGNEncoder:
    torch.manual_seed(seed)
    return hnn.RSGNEncoder(4, 6, **{**SMALL, **kw})


def _tokens(B=5, T=12, seed=1, dtype=torch.float32):
    return torch.randn(B, T, 4, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def test_shapes_on_the_device(device):
    enc = _encoder().to(device)
    out, acts = enc(_tokens().to(device), return_activity=True)
    assert out.shape == (5, 6) and out.device.type == device.type
    assert len(acts) == SMALL["n_steps"] + 1 and all(a.shape == (5, 64) for a in acts)
    assert enc(_tokens(B=2, T=30).to(device)).shape == (2, 6)  # any sequence length


def test_gradients_reach_the_fast_parameters_only():
    enc = _encoder()
    enc(_tokens()).pow(2).sum().backward()
    for name, p in enc.named_parameters():
        if p.requires_grad:
            assert p.grad is not None and bool(torch.isfinite(p.grad).all()), name
        else:
            assert p.grad is None, name
    fast = {n for n, p in enc.named_parameters() if p.requires_grad}
    assert {"core.spark.0.weight", "core.embed.weight", "core.head.weight"} <= fast
    assert not {"core.pos", "core.theta", "core.affinity"} & fast  # slow: moved by the slow rules only
    assert float(enc.core.spark[0].weight.grad.abs().sum()) > 0  # through the ignited nodes' distances


def test_activity_is_exactly_zero_where_the_sparse_model_says_so():
    enc = _encoder(self_excitation=1.0)  # keeps activity alive over the steps
    enc.core.theta.data.fill_(0.3)
    B, n = 5, SMALL["n_nodes"]
    with torch.no_grad():
        _, acts = enc(_tokens(B=B), return_activity=True)
    n_ign = math.ceil(enc.config.ignite_frac * n)
    assert bool(((acts[0] != 0).sum(1) == n_ign).all())  # ignition: exactly the top ceil(frac N)
    nbr, alive = enc.core.nbr, enc.core.alive
    cap = math.ceil(enc.config.max_active_frac * n)
    for prev, now in zip(acts, acts[1:]):
        # a node can be active only if it was active or an active node sent to it along an alive edge
        reach = prev != 0
        for b in range(B):
            senders = (prev[b] != 0).nonzero().squeeze(1)
            reach[b, nbr[senders][alive[senders]]] = True
        assert bool((now[~reach] == 0).all())
        assert bool(((now != 0).sum(1) <= cap).all())
        assert bool(((now == 0) | (now >= enc.config.floor)).all())  # the hard floor, after inhibition too
    assert any(bool((a != 0).any()) for a in acts[1:]), "the test wants activity after ignition"


def test_deterministic_under_a_seed():
    x = _tokens()
    a, b = _encoder(seed=3), _encoder(seed=3)
    with torch.no_grad():
        out = a(x)
        assert torch.equal(out, b(x)) and torch.equal(out, a(x))
        assert not torch.equal(out, _encoder(seed=4)(x))


def test_float64():
    enc = _encoder().to(torch.float64)
    assert enc(_tokens(dtype=torch.float64)).dtype == torch.float64
    assert enc.core.temperature.dtype == torch.float64  # buffers follow


def test_slow_rules_are_explicit_calls():
    enc = _encoder()
    enc.train()
    x = _tokens(B=8)
    enc(x)
    theta, affinity = enc.core.theta.detach().clone(), enc.core.affinity.detach().clone()
    out = enc.slow_step(torch.linspace(0.1, 2.0, 8))
    assert set(out) == {"target", "hebbian_update"} and out["target"] == enc.config.target_activity
    assert not torch.equal(enc.core.theta, theta)  # homeostasis moved the thresholds
    moved = enc.core.affinity != affinity
    assert bool((~moved | enc.core.alive).all())  # only alive edges learn
    with pytest.raises(ValueError, match="^loss:"):  # one slow step per recorded batch
        enc.slow_step(torch.ones(8))
    for _ in range(2):
        enc(x)
        enc.slow_step(torch.rand(8, generator=torch.Generator().manual_seed(0)))
    assert set(enc.structure_step()) == {"pruned", "sprouted"}
    enc.set_temperature(0.5)
    assert float(enc.core.temperature) == 0.5


@pytest.mark.parametrize("name, call", [
    ("x", lambda e: e(torch.randn(5, 12, 3))),
    ("x", lambda e: e(torch.randn(12, 4))),
    ("x", lambda e: e(torch.full((2, 3, 4), float("nan")))),
    ("x", lambda e: e(torch.empty(0, 3, 4))),
    ("x", lambda e: e(torch.randn(2, 3, 4, dtype=torch.float64))),
    ("x", lambda e: e(torch.randn(2, 3, 4, device="meta"))),
    ("loss", lambda e: (e.train(), e(torch.randn(5, 3, 4)), e.slow_step(torch.ones(4)))),
    ("epochs", lambda e: hnn.RSGNEncoder(4, 6, epochs=3)),
    ("colour", lambda e: hnn.RSGNEncoder(4, 6, colour=3)),
    ("out_features", lambda e: hnn.RSGNEncoder(4, 0)),
])
def test_bad_input_is_one_value_error_naming_the_argument(name, call):
    with pytest.raises(ValueError) as err:
        call(_encoder())
    assert str(err.value).startswith(f"{name}:"), str(err.value)
