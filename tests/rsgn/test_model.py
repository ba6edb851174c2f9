import math

import geoopt
import pytest
import torch

import hebbnets as hn
from hebbnets._model import DataSpec
from hebbnets.rsgn import geometry as G
from hebbnets.rsgn.model import RSGN, RSGNConfig, cap_active, cap_sparse, inhibit, inhibit_sparse
from hebbnets.training import carve_validation, supervised_loss


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


def _perturbed(m):
    with torch.no_grad():  # a graph with pruned edges and non-trivial affinities
        m.alive[::3, 1] = False
        m.affinity.normal_(0, 1)
        m.temperature.fill_(0.5)
    return m


def _coact_matrix(coact, n_samples, n_edges):
    b, e, c = coact
    return torch.zeros(n_samples, n_edges, dtype=c.dtype).index_put((b, e), c, accumulate=True)


@pytest.mark.parametrize("cfg", [dict(), dict(max_active_frac=0.0, inhibition=0.0), dict(level_sign="code", floor=0.3),
                                 dict(pool_sigma=0.7), dict(levels="index", max_active_frac=0.03),
                                 dict(readout="all")])
def test_sparse_equals_dense_on_the_same_graph(cfg):
    m = _perturbed(_built(dtype=torch.float64, **cfg)).train()
    x = _data().x[:5].double()
    tok = m._tokens(x, None)
    params = [*m.transform.parameters(), m.embed.weight]
    o_s, tr_s = m.propagate(tok, "sparse")
    rec_s, stats_s = m._batch, dict(m.last_stats)
    g_s = torch.autograd.grad(o_s.sum(), params)
    o_d, tr_d = m.propagate(tok, "dense")
    rec_d, stats_d = m._batch, dict(m.last_stats)
    g_d = torch.autograd.grad(o_d.sum(), params)
    torch.testing.assert_close(o_s, o_d, rtol=1e-10, atol=1e-10)
    for a, b in zip(tr_s, tr_d):
        a, b = m.dense_activity(a, 5), m.dense_activity(b, 5)
        assert torch.equal(a > 0, b > 0)  # identical exact-zero pattern
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    for a, b in zip(g_s, g_d):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10)
    assert stats_s == stats_d  # activity before / after the cap, edges
    # the slow rules see the same firing and co-activation in both formulations
    assert torch.equal(rec_s["fired"].sort().values, rec_d["fired"].sort().values)
    E = m.config.n_nodes * m.config.k
    torch.testing.assert_close(_coact_matrix(rec_s["coact"], 5, E), _coact_matrix(rec_d["coact"], 5, E))
    assert any(bool(a[1].numel()) for a in tr_s[1:]) and rec_s["coact"][2].numel() > 0  # not vacuous


def test_coactivation_is_pre_times_post_activity_of_used_edges():
    m = _perturbed(_built(dtype=torch.float64)).train()
    tok = m._tokens(_data().x[:4].double(), None)
    with torch.no_grad():
        _, trace = m.propagate(tok, "dense")
    n, k = m.nbr.shape
    src = torch.arange(n).repeat_interleave(k)
    ref = torch.zeros(4, n * k, dtype=torch.float64)
    for s in range(1, len(trace)):  # the plain definition: sum_s alpha_src^(s-1) alpha_dst^(s) on alive edges
        prev, new = m.dense_activity(trace[s - 1], 4), m.dense_activity(trace[s], 4)
        ref += prev[:, src] * new[:, m.nbr.reshape(-1)] * m.alive.reshape(-1)
    m.propagate(tok, "sparse")
    torch.testing.assert_close(_coact_matrix(m._batch["coact"], 4, n * k), ref)
    assert float(ref.sum()) > 0


def test_kdtree_ignition_equals_dense_ignition():
    m = _built(dtype=torch.float64, n_nodes=200, k=6)
    tok = m._tokens(_data().x[:6].double(), None)
    sparks = G.to_ball(m.spark(tok)).detach()
    p = m.positions().detach()
    t_d, a_d = m.nearest_spark(sparks, p, "dense")
    t_k, a_k = m.nearest_spark(sparks, p, "kdtree")
    assert torch.equal(a_d, a_k)
    torch.testing.assert_close(t_d, t_k, rtol=1e-9, atol=1e-12)
    ref = G.pairwise_dist(sparks, p).min(1)  # (B, N) by brute force
    assert torch.equal(ref.indices, a_k)
    m.config.ignition = "kdtree"
    o_k, tr_k = m.propagate(tok)
    m.config.ignition = "dense"
    o_d, tr_d = m.propagate(tok)
    torch.testing.assert_close(o_k, o_d)
    assert torch.equal(tr_k[0][0], tr_d[0][0])


def test_receptive_field_is_the_weighted_token_mean_and_sharpens_to_the_nearest_token():
    m = _built(dtype=torch.float64, pool_sigma=0.5)
    tok = m._tokens(_data().x[:3].double(), None)
    p = m.positions()
    ign = m.ignite(tok, p)
    emb = m.embed(tok)  # (B, T, d_h)
    rows = torch.tensor([0, 1, 5, 9])  # some ignited nodes
    b, nodes = ign.idx[rows] // 64, ign.idx[rows] % 64
    got = m.receptive_field(ign.sparks, emb, b, p[nodes])
    for a in range(len(b)):  # the plain loop
        d = torch.stack([G.dist(ign.sparks[b[a], t], p[nodes[a]]) for t in range(tok.shape[1])])
        w = torch.exp(-(d**2) / (2 * 0.5**2))
        torch.testing.assert_close(got[a], (w[:, None] * emb[b[a]]).sum(0) / w.sum())
    m.config.pool_sigma = 1e-3  # a vanishing width picks the igniting (nearest) token
    sharp = m.receptive_field(ign.sparks, emb, b, p[nodes])
    torch.testing.assert_close(sharp, emb[b, ign.token[rows]])


def test_inhibition_can_only_lower_activity_and_sparse_equals_dense():
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
        ids = alpha.reshape(-1).nonzero().squeeze(1)
        sparse = inhibit_sparse(ids, alpha.reshape(-1)[ids], nbr, beta, 0.3)
        torch.testing.assert_close(sparse, out2.reshape(-1)[ids])


def test_sparse_cap_equals_dense_cap():
    g = torch.Generator().manual_seed(1)
    alpha = torch.rand(6, 40, generator=g) * (torch.rand(6, 40, generator=g) < 0.4)
    ids = alpha.reshape(-1).nonzero().squeeze(1)
    for cap in (0, 1, 3, 7, 40):
        dense = cap_active(alpha, cap)
        sparse = cap_sparse(ids, alpha.reshape(-1)[ids], cap, 40)
        torch.testing.assert_close(sparse, dense.reshape(-1)[ids])
        if 0 < cap < 40:
            assert bool(((dense > 0).sum(1) <= cap).all()) and bool(((dense > 0).sum(1) == torch.clamp((alpha > 0).sum(1), max=cap)).all())


def test_ignition_and_cap_give_exact_zeros_and_activity_is_measured_before_the_cap():
    m = _built(max_active_frac=0.1, t_start=5.0, floor=0.1)  # hot: many nodes fire, the cap binds
    with torch.no_grad():
        m.theta.fill_(0.0)
        _, trace = m.propagate(m._tokens(_data().x[:7], None))
    n_ign = math.ceil(0.06 * 64)
    assert bool(((m.dense_activity(trace[0], 7) > 0).sum(1) == n_ign).all())
    cap = math.ceil(0.1 * 64)
    for pair in trace[1:]:
        a = m.dense_activity(pair, 7)
        assert bool(((a > 0).sum(1) <= cap).all())
        assert bool(((a == 0) | (a >= m.config.floor)).all())
    st = m.last_stats
    assert len(st["active_fraction"]) == len(st["active_pre_cap"]) == m.config.n_steps + 1
    assert all(pre >= post for pre, post in zip(st["active_pre_cap"][1:], st["active_fraction"][1:]))
    assert st["activity"] > 0.2 > cap / 64  # the measured activity is not the cap ...
    assert st["activity_post_cap"] <= cap / 64  # ... which only bounds what propagates
    assert st["activity"] == pytest.approx(sum(st["active_pre_cap"][1:]) / m.config.n_steps)
    assert st["edges_per_sample"] <= m.config.n_steps * cap * m.config.k


def test_edge_weights_live_on_edges_levels_are_the_hyperbolic_radius():
    m = _built()
    with torch.no_grad():
        m.alive[0, :] = False
    g = m.graph()
    w = g.weights()
    assert w.shape == (64 * 6,)
    assert bool((w.reshape(64, 6)[0] == 0).all()) and bool((w.reshape(64, 6)[1:] > 0).all())
    p = m.positions()
    j = m.nbr[1, 0]
    lv = G.dist(p, torch.zeros_like(p))  # radius in the ball
    torch.testing.assert_close(g.levels, lv)
    torch.testing.assert_close(lv, 2 * torch.atanh(p.norm(dim=1)), rtol=1e-4, atol=1e-5)
    phi = torch.nn.functional.softplus(lv[j] - lv[1] + 1)
    torch.testing.assert_close(w[6], torch.sigmoid(m.affinity[1, 0]) * torch.exp(-G.dist(p[1], p[j])) * phi)
    torch.testing.assert_close(g.weights(torch.tensor([6, 7])), w[6:8])
    # the kNN graph really holds each node's k nearest nodes
    ref = G.pairwise_dist(p, p).fill_diagonal_(float("inf")).topk(6, largest=False).indices
    assert torch.equal(m.nbr.sort(1).values, ref.sort(1).values)
    # the author's levels: linspace by node index
    mi = _built(levels="index")
    torch.testing.assert_close(mi.graph().levels, torch.linspace(0, 1, 64))


def test_slow_parameters_get_gradients_only_when_switched_on():
    for slow_grad, position_grad in ((False, False), (True, False), (False, True)):
        m = _built(slow_grad=slow_grad, position_grad=position_grad)
        out, _ = m.propagate(m._tokens(_data().x[:6], None))
        out.sum().backward()
        assert (m.pos.grad is not None) == (slow_grad or position_grad)
        for p in (m.theta, m.affinity):
            assert (p.grad is not None) == slow_grad
        assert m.embed.weight.grad is not None and m.transform.weight.grad is not None


def test_positions_with_gradients_train_with_riemannian_adam_and_stay_in_the_ball(tmp_path):
    m = hn.models.make("rsgn", seed=0, n_nodes=48, k=6, d_hidden=8, n_steps=2, epochs=2, batch_size=16,
                       val_fraction=0.0, progress=False, ignite_frac=0.05, position_grad=True, structural=False)
    seen = []

    class Spy(hn.training.Callback):
        def on_fit_start(self, model, train, val):
            seen.append(model.pos.detach().clone())

    m.callbacks = [Spy()]
    m.fit(_data())
    assert isinstance(m.pos, geoopt.ManifoldParameter)
    opt = hn.training.make_optimizer(m.parameters(), m.config)
    assert isinstance(opt, geoopt.optim.RiemannianAdam)
    assert not torch.allclose(m.pos.detach(), seen[0])  # the positions moved ...
    assert bool((m.pos.detach().norm(dim=1) < 1).all())  # ... on the ball
    with pytest.raises(ValueError, match="optimizer"):
        hn.training.make_optimizer(m.parameters(), RSGNConfig(optimizer="adamw"))
    m.save(tmp_path / "m")  # safetensors (no pickle) round trip of the manifold parameter
    m2 = hn.models.load(tmp_path / "m")
    assert torch.equal(m2.pos.detach(), m.pos.detach()) and isinstance(m2.pos, geoopt.ManifoldParameter)


def test_three_factor_rule_grows_the_edge_that_predicts_low_loss_and_shrinks_the_other():
    m = _built(hebbian=True, homeostasis=False, eta_affinity=1.0)
    n, k = m.nbr.shape
    good, bad, neutral = 3 * k + 2, 7 * k + 1, 11 * k  # three edge slots
    loss = torch.tensor([0.2, 0.3, 2.0, 2.5])  # per-sample losses
    # good's co-activation goes with the low-loss samples, bad's with the high-loss ones,
    # neutral is equally co-active in every sample
    sample = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])
    edge = torch.tensor([good, good, bad, bad, neutral, neutral, neutral, neutral])
    c = torch.tensor([0.8, 0.6, 0.7, 0.9, 0.5, 0.5, 0.5, 0.5])
    record = {"n_samples": 4, "fired": torch.zeros(0, dtype=torch.long), "loss": loss, "coact": (sample, edge, c)}
    before = m.affinity.detach().clone().reshape(-1)
    m.slow_step(record, target=0.02)
    after = m.affinity.detach().reshape(-1)
    assert float(after[good]) > 0 > float(after[bad])
    assert float(after[neutral]) == pytest.approx(0.0, abs=1e-7)
    changed = (after != before).nonzero().squeeze(1).tolist()
    assert sorted(changed) == sorted([good, bad])  # no other edge moves
    # the value: eta * mean_b[(Lbar - L_b) c_eb]
    lbar = float(loss.mean())
    ref = m.config.eta_affinity * ((lbar - 0.2) * 0.8 + (lbar - 0.3) * 0.6) / 4
    assert float(after[good]) == pytest.approx(ref, rel=1e-5)
    # shifting every loss by a constant (e.g. all losses positive or all negative) changes nothing
    m2 = _built(hebbian=True, homeostasis=False, eta_affinity=1.0)
    m2.slow_step({**record, "loss": loss + 7.0}, target=0.02)
    torch.testing.assert_close(m2.affinity.detach().reshape(-1), after)
    # dead edges do not move
    m3 = _built(hebbian=True, homeostasis=False, eta_affinity=1.0)
    with torch.no_grad():
        m3.alive.reshape(-1)[good] = False
    m3.slow_step(record, target=0.02)
    assert float(m3.affinity.reshape(-1)[good]) == 0.0


def test_homeostasis_drives_the_pre_cap_firing_rate_to_its_target():
    m = _built(target_activity=0.05, eta_threshold=0.5, max_active_frac=0.05, inhibition=0.0, ignite_frac=0.05,
               hebbian=False)
    x = _data().x[:16]
    m.train()
    with torch.no_grad():
        m.temperature.fill_(0.2)
        tok = m._tokens(x, None)
        m.propagate(tok)
        first = m.last_stats["activity"]
        for _ in range(300):
            m.propagate(tok)
            m.slow_step({**m._batch, "loss": torch.ones(16)}, target=0.05)
        m.propagate(tok)
        last = m.last_stats["activity"]
    assert first > 0.1  # starts far above the target (and above the 5 % cap) ...
    assert abs(last - 0.05) < 0.02  # ... ends at the target, measured before the cap


def test_target_schedule_is_geometric_then_flat():
    m = _built(target_start=0.2, target_activity=0.02, target_epochs=2)
    m._steps_per_epoch = 10
    assert m.target_at(0) == pytest.approx(0.2)
    assert m.target_at(10) == pytest.approx(math.sqrt(0.2 * 0.02))
    assert m.target_at(20) == pytest.approx(0.02) and m.target_at(500) == pytest.approx(0.02)


def _fit_small(**cfg):
    base = dict(seed=1, n_nodes=64, k=6, d_hidden=8, n_steps=3, epochs=5, batch_size=16, val_fraction=0.25,
                progress=False, ignite_frac=0.06, patience=50)
    m = hn.models.make("rsgn", **{**base, **cfg})
    split = _data(n=96)
    m.fit(split)
    return m, split


def test_restored_model_is_the_selected_one():
    """The model scored after ``fit`` is the epoch that was selected: its validation loss is the
    recorded one (no slow step, annealing or rebuild runs after the restore)."""
    m, split = _fit_small(max_activity=0.0)
    h = m.train_history
    sel = m.selected_epoch
    assert sel is not None and sel < len(h["val"]) - 1  # not the last epoch: the restore matters
    _, va = carve_validation(len(split), m.config.val_fraction, torch.Generator().manual_seed(m.seed))
    val = split.subset(va)
    with torch.no_grad():
        v = float(supervised_loss(m._forward(val.x, None), val, m.spec))
    assert v == pytest.approx(h["val"][sel], rel=1e-6, abs=1e-7)
    assert float(m.temperature) == pytest.approx(h["temperature"][sel])  # validated at this temperature


def test_only_epochs_meeting_the_activity_target_are_selected():
    free, _ = _fit_small(max_activity=0.0)
    # the selection rule does not change training: a threshold below the activity of the epoch
    # chosen without it makes the rule decide
    act = free.train_history["activity_val"]
    limit = max(a for a in act if a < act[free.selected_epoch])
    m, _ = _fit_small(max_activity=limit)
    h = m.train_history
    assert h["val"] == free.train_history["val"]
    ok = [a <= limit for a in h["activity_val"]]
    assert h["selectable"] == [float(o) for o in ok]
    assert any(ok) and not all(ok)  # the rule decides something
    sel = m.selected_epoch
    assert ok[sel] and h["val"][sel] == min(v for v, o in zip(h["val"], ok) if o)
    assert free.selected_epoch != sel  # without the rule another epoch wins
    summary = m.fit_summary()
    assert summary["selected_epoch"] == sel and summary["activity_target_met"]
    assert summary["activity_val_selected"] == h["activity_val"][sel] <= limit
    assert summary["pruned_total"] == sum(h["pruned"]) and summary["alive_edges"] == int(m.alive.sum())
    assert len(h["activity_pre_cap_per_step_train"][0]) == m.config.n_steps + 1


def test_pruning_sprouting_and_rebuild():
    m = _built(prune_threshold=0.1, sprout_threshold=0.5, eta_position=0.0)
    n, k = m.nbr.shape
    with torch.no_grad():
        m.affinity[5, :2] = -5.0  # sigmoid < 0.1: pruned
    # node 5 and one of its 2-hop nodes fire together, everything else is independent noise
    j = int(m.nbr[m.nbr[5, 3], 0])
    assert j != 5 and j not in m.nbr[5, 2:].tolist()
    g = torch.Generator().manual_seed(0)
    fired = torch.rand(64, n, generator=g) < 0.3
    fired[:, j] = fired[:, 5]
    s, i = fired.nonzero(as_tuple=True)
    m._firing.add(s, i, 64)
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
    w = m.graph().weights().reshape(n, k)
    assert bool((w[~m.alive] == 0).all()) and bool((w[m.alive] > 0).all())


def test_firing_correlation_matches_numpy():
    import numpy as np

    from hebbnets.rsgn.plasticity import FiringHistory

    g = torch.Generator().manual_seed(3)
    h = FiringHistory(40, 10)
    fired = torch.rand(50, 10, generator=g) < 0.4  # 50 samples into a buffer of 40: the last 40 stay
    fired[:, 9] = False  # never fires: correlation 0
    for start in (0, 25):
        s, i = fired[start : start + 25].nonzero(as_tuple=True)
        h.add(s, i, 25)
    kept = fired[10:].numpy().astype(float)
    i, j = torch.tensor([0, 1, 2, 9]), torch.tensor([1, 2, 2, 3])
    got = h.correlation(i, j)
    ref = [np.corrcoef(kept[:, a], kept[:, b])[0, 1] for a, b in list(zip(i.tolist(), j.tolist()))[:3]]
    torch.testing.assert_close(got[:3], torch.tensor(ref, dtype=torch.float32), rtol=1e-5, atol=1e-6)
    assert float(got[3]) == 0.0 and len(h) == 40


def test_fit_predict_anneal_checkpoint(tmp_path):
    split = _data()
    kw = dict(seed=1, n_nodes=48, k=6, d_hidden=8, n_steps=2, epochs=3, batch_size=16, val_fraction=0.0,
              progress=False, ignite_frac=0.05)
    m = hn.models.make("rsgn", **kw)
    m.fit(split)
    assert m.selected_epoch is None  # no validation: the last epoch
    assert float(m.temperature) == pytest.approx(m.config.t_end)
    assert len(m.stats["hebbian_update"]) == 9 and len(m.stats["activity"]) == 9
    assert all(0 < a < 1 for a in m.stats["activity"])
    y1 = m.predict(split.x)
    assert y1.shape == (48,) and y1.dtype == torch.long
    m.save(tmp_path / "m")
    m2 = hn.models.load(tmp_path / "m")
    assert torch.equal(m2.predict(split.x), y1)
    # determinism under seed
    m3 = hn.models.make("rsgn", **kw).fit(split)
    assert torch.equal(m3.predict(split.x), y1)


def test_the_slow_rules_run_only_from_the_callback():
    m = _built().train()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    tok = m._tokens(_data().x[:8], None)
    for _ in range(3):
        m.propagate(tok)  # forward passes alone change nothing
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    cb = m.training_callbacks()[0]
    with pytest.raises(RuntimeError, match="forward"):
        m._batch = None
        cb.on_step_end(m, 0, None, torch.tensor(1.0))


def test_bad_config_and_input():
    with pytest.raises(ValueError, match="k"):
        RSGNConfig(n_nodes=8, k=8)
    for field, value in (("level_sign", "up"), ("levels", "depth"), ("ignition", "ball"), ("knn", "faiss"),
                         ("floor", 2.0), ("pool_sigma", -1.0), ("target_epochs", -1), ("max_activity", 1.5)):
        with pytest.raises(ValueError, match=field):
            RSGNConfig(**{field: value})
    with pytest.raises(ValueError, match="x"):
        hn.models.make("rsgn", n_nodes=16, k=4, progress=False, epochs=1).fit(hn.Split(torch.randn(4, 2, 3, 3), torch.arange(4)))
    m = hn.models.make("rsgn", n_nodes=16, k=4, d_hidden=4, progress=False, epochs=1, val_fraction=0.0).fit(_data(n=8))
    with pytest.raises(ValueError, match="x"):
        m.predict(torch.randn(3, 5, 6))


def test_pruning_and_sprouting_fire_in_ordinary_training():
    """Default slow rules and thresholds on a small copy of the paper's long-range task: the
    three-factor rule drives some affinities below the prune threshold, and correlated 2-hop
    nodes sprout into the freed slots."""
    task = hn.tasks.make("rsgn_longrange", n_samples=1200, seq_len=32, n_features=8)
    m = hn.models.make("rsgn", seed=0, n_nodes=256, d_hidden=16, epochs=2, batch_size=16, val_fraction=0.0,
                       progress=False)
    m.fit(task.train)
    s = m.fit_summary()
    assert s["pruned_total"] > 0 and s["sprouted_total"] > 0
    assert s["pruned_total"] == sum(m.stats["pruned"]) and s["sprouted_total"] == sum(m.stats["sprouted"])
    assert int(m.sprouted.sum()) > 0 and s["alive_edges"] < s["edges"]
    assert s["affinity_negative_fraction"] > 0.05  # the rule depresses edges, not only potentiates them
