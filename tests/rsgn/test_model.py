import math

import pytest
import torch

import hebbnets as hn
from hebbnets._model import DataSpec
from hebbnets.rsgn import geometry as G
from hebbnets.rsgn.model import RSGN, RSGNConfig, inhibit


def _data(n=48, t=12, d=6, c=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, t, d, generator=g)
    y = torch.arange(n) % c
    x[torch.arange(n), 0, :c] += 2.0 * torch.nn.functional.one_hot(y, c).float()  # learnable signal
    return hn.Split(x, y)


def _built(seed=0, dtype=torch.float32, **cfg):
    base = dict(n_nodes=64, k=6, d_hidden=8, n_steps=3, ignite_frac=0.06, progress=False)
    m = RSGN(RSGNConfig(**{**base, **cfg}), seed=seed)
    torch.manual_seed(seed)
    m.spec = DataSpec((12, 6), (), 4)
    m._build(m.spec)
    return m.to(dtype)


@pytest.mark.parametrize("cfg", [dict(), dict(max_active_frac=0.0, inhibition=0.0), dict(level_sign="code", floor=0.3),
                                 dict(pool_sigma=0.7)])
def test_sparse_equals_dense_on_the_same_graph(cfg):
    m = _built(dtype=torch.float64, **cfg)
    with torch.no_grad():  # a graph with pruned edges and non-trivial affinities
        m.alive[::3, 1] = False
        m.affinity.normal_(0, 1)
        m.temperature.fill_(0.5)
    x = _data().x[:5].double()
    tok = m._tokens(x, None)
    o_s, tr_s = m.propagate(tok, "sparse")
    o_s.sum().backward()
    g_s = [p.grad.clone() for p in m.transform.parameters()] + [m.embed.weight.grad.clone()]
    m.zero_grad()
    o_d, tr_d = m.propagate(tok, "dense")
    o_d.sum().backward()
    g_d = [p.grad.clone() for p in m.transform.parameters()] + [m.embed.weight.grad.clone()]
    torch.testing.assert_close(o_s, o_d, rtol=1e-10, atol=1e-10)
    for a, b in zip(tr_s, tr_d):
        assert torch.equal(a > 0, b > 0)  # identical exact-zero pattern
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    for a, b in zip(g_s, g_d):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10)
    assert any(bool((a > 0).any()) for a in tr_s[1:])  # the comparison is not vacuous


def test_receptive_field_is_the_weighted_token_mean_and_sharpens_to_the_nearest_token():
    m = _built(dtype=torch.float64, pool_sigma=0.5)
    tok = m._tokens(_data().x[:3].double(), None)
    p = m.positions()
    alpha, t_star, sparks = m.ignite(tok, p)
    emb = m.embed(tok)  # (B, T, d_h)
    b = torch.tensor([0, 1, 2, 2])
    nodes = alpha[b].argmax(1)  # an ignited node of each sample
    got = m.receptive_field(sparks, emb, b, p[nodes])
    for a in range(len(b)):  # the plain loop
        d = torch.stack([G.dist(sparks[b[a], t], p[nodes[a]]) for t in range(tok.shape[1])])
        w = torch.exp(-(d**2) / (2 * 0.5**2))
        torch.testing.assert_close(got[a], (w[:, None] * emb[b[a]]).sum(0) / w.sum())
    m.config.pool_sigma = 1e-3  # a vanishing width picks the igniting (nearest) token
    sharp = m.receptive_field(sparks, emb, b, p[nodes])
    torch.testing.assert_close(sharp, emb[b, t_star[b, nodes]])


def test_pool_sigma_rejects_negative_values():
    with pytest.raises(ValueError, match="pool_sigma"):
        RSGNConfig(pool_sigma=-1.0)


def test_inhibition_can_only_lower_activity():
    g = torch.Generator().manual_seed(0)
    for beta in (0.1, 1.0, 10.0):
        alpha = torch.rand(8, 50, generator=g) * (torch.rand(8, 50, generator=g) < 0.5)
        nbr = torch.randint(0, 50, (50, 5), generator=g)
        out = inhibit(alpha, nbr, beta, floor=0.0)
        assert bool((out <= alpha).all())
        assert bool((out[alpha == 0] == 0).all())
        # strictly lower wherever a neighbour is active
        lower = (alpha > 0) & (alpha[:, nbr].sum(-1) > 0)
        assert bool((out[lower] < alpha[lower]).all())
        # with a floor, suppressed nodes become exact zeros
        out2 = inhibit(alpha, nbr, beta, floor=0.3)
        assert bool((out2 <= alpha).all()) and bool(((out2 == 0) | (out2 >= 0.3)).all())


def test_ignition_and_cap_give_exact_zeros():
    m = _built(max_active_frac=0.1)
    with torch.no_grad():
        _, trace = m.propagate(m._tokens(_data().x[:7], None))
    n_ign = math.ceil(0.06 * 64)
    assert bool(((trace[0] > 0).sum(1) == n_ign).all())
    cap = math.ceil(0.1 * 64)
    for a in trace[1:]:
        assert bool(((a > 0).sum(1) <= cap).all())
        assert bool(((a == 0) | (a >= m.config.floor)).all())
    assert len(m.last_stats["active_fraction"]) == m.config.n_steps + 1
    assert m.last_stats["edges_per_sample"] <= m.config.n_steps * cap * m.config.k


def test_edge_weights_live_on_edges_and_pruned_edges_are_exact_zero():
    m = _built()
    with torch.no_grad():
        m.alive[0, :] = False
    g = m.graph()
    assert g.w.shape == (64 * 6,)
    assert bool((g.w.reshape(64, 6)[0] == 0).all()) and bool((g.w.reshape(64, 6)[1:] > 0).all())
    p = m.positions()
    d = G.dist(p[1], p[m.nbr[1, 0]])
    phi = torch.nn.functional.softplus(m.levels[m.nbr[1, 0]] - m.levels[1] + 1)
    torch.testing.assert_close(g.w[6], torch.sigmoid(m.affinity[1, 0]) * torch.exp(-d) * phi)
    # the kNN graph really holds each node's k nearest nodes
    ref = G.pairwise_dist(p, p).fill_diagonal_(float("inf")).topk(6, largest=False).indices
    assert torch.equal(m.nbr.sort(1).values, ref.sort(1).values)


def test_slow_parameters_get_gradients_only_when_switched_on():
    for slow_grad in (False, True):
        m = _built(slow_grad=slow_grad)
        out, _ = m.propagate(m._tokens(_data().x[:6], None))
        out.sum().backward()
        for p in (m.z, m.theta, m.affinity):
            assert (p.grad is not None) == slow_grad
        assert m.embed.weight.grad is not None and m.transform.weight.grad is not None


def test_reward_is_baseline_subtracted_and_modulates_affinity():
    m = _built()
    n, k = m.nbr.shape
    co = torch.zeros(n, k)
    co[3, 2] = 0.5
    mean = torch.zeros(n)
    m.slow_step(mean, co, loss=2.0)  # first batch: reward 0, nothing moves
    assert float(m.affinity.abs().sum()) == 0
    r = m.slow_step(mean, co, loss=1.0)["reward"]  # better than the running mean
    assert r > 0 and float(m.affinity[3, 2]) > 0 and float(m.affinity.abs().sum()) == float(m.affinity[3, 2])
    m2 = _built()
    m2.slow_step(mean, co, loss=1.0)
    assert m2.slow_step(mean, co, loss=3.0)["reward"] < 0 and float(m2.affinity[3, 2]) < 0


def test_homeostasis_reaches_target_activity():
    m = _built(target_activity=0.05, eta_threshold=0.5, max_active_frac=0.0, inhibition=0.0, ignite_frac=0.05)
    x = _data().x[:16]
    m.eval()
    with torch.no_grad():
        m.temperature.fill_(0.2)
        tok = m._tokens(x, None)
        first = float(m.propagate(tok)[1][-1].mean())
        for _ in range(300):
            alpha = m.propagate(tok)[1][-1]
            m.slow_step(alpha.mean(0), torch.zeros_like(m.affinity), loss=1.0)
        last = float(torch.stack([m.propagate(tok)[1][-1].mean() for _ in range(1)]).mean())
    assert abs(first - 0.05) > 0.05  # starts far away ...
    assert abs(last - 0.05) < 0.02  # ... ends at the target


def test_pruning_sprouting_and_rebuild():
    m = _built(prune_threshold=0.1, sprout_threshold=0.5, eta_position=0.0)
    n, k = m.nbr.shape
    with torch.no_grad():
        m.affinity[5, :2] = -5.0  # sigmoid < 0.1: pruned
    # node 5 and one of its 2-hop nodes fire together, everything else is independent noise
    j = int(m.nbr[m.nbr[5, 3], 0])
    assert j != 5 and j not in m.nbr[5, 2:].tolist()
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        mean = torch.rand(n, generator=g)
        mean[j] = mean[5]
        m._history.append(mean)
    knn_before = m.nbr.clone()
    out = m.structure_step()
    assert out["pruned"] == 2 and out["sprouted"] >= 1
    # the sprouted edge survives the kNN rebuild that ends the step, in a pruned slot
    slot = (m.nbr[5] == j).nonzero().flatten().tolist()
    assert len(slot) == 1 and bool(m.alive[5, slot[0]]) and bool(m.sprouted[5, slot[0]])
    assert int(m.displaced[5, slot[0]]) in knn_before[5, :2].tolist()
    assert int((~m.alive[5]).sum()) == 1  # the other pruned edge stays dead
    state = {name: b.clone() for name, b in m.named_buffers()}
    m.rebuild_graph()  # positions unchanged: rebuilding again changes nothing, revives nothing
    assert all(torch.equal(state[name], b) for name, b in m.named_buffers())
    w = m.graph().w.reshape(n, k)
    assert bool((w[~m.alive] == 0).all()) and bool((w[m.alive] > 0).all())


def test_fit_predict_anneal_checkpoint(tmp_path):
    split = _data()
    m = hn.models.make("rsgn", seed=1, n_nodes=48, k=6, d_hidden=8, n_steps=2, epochs=3, batch_size=16,
                       val_fraction=0.0, progress=False, ignite_frac=0.05)
    m.fit(split)
    assert float(m.temperature) == pytest.approx(m.config.t_end)
    assert len(m.stats["hebbian_update"]) == 9 and len(m.stats["active_fraction"]) == 9
    assert all(0 < a < 1 for a in m.stats["active_fraction"])
    y1 = m.predict(split.x)
    assert y1.shape == (48,) and y1.dtype == torch.long
    m.save(tmp_path / "m")
    m2 = hn.models.load(tmp_path / "m")
    assert torch.equal(m2.predict(split.x), y1)
    # determinism under seed
    m3 = hn.models.make("rsgn", seed=1, n_nodes=48, k=6, d_hidden=8, n_steps=2, epochs=3, batch_size=16,
                        val_fraction=0.0, progress=False, ignite_frac=0.05).fit(split)
    assert torch.equal(m3.predict(split.x), y1)


def test_bad_config_and_input():
    with pytest.raises(ValueError, match="k"):
        RSGNConfig(n_nodes=8, k=8)
    with pytest.raises(ValueError, match="level_sign"):
        RSGNConfig(level_sign="up")
    with pytest.raises(ValueError, match="floor"):
        RSGNConfig(floor=2.0)
    with pytest.raises(ValueError, match="x"):
        hn.models.make("rsgn", n_nodes=16, k=4, progress=False, epochs=1).fit(hn.Split(torch.randn(4, 2, 3, 3), torch.arange(4)))
    m = hn.models.make("rsgn", n_nodes=16, k=4, d_hidden=4, progress=False, epochs=1, val_fraction=0.0).fit(_data(n=8))
    with pytest.raises(ValueError, match="x"):
        m.predict(torch.randn(3, 5, 6))
