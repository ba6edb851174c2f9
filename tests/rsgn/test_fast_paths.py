"""The sparse RSGN's fast paths against their references: the one-matmul nearest spark, the
flat-buffer row lookup of a sparse step, the bounded nearest-spark search of ignition, and the
sparse step's kept-states / non-zero inhibition / once-per-sender weights / fused messages."""
import numpy as np
import pytest
import torch

import hebbnets as hn
from hebbnets._model import DataSpec
from hebbnets.rsgn import geometry as G
from hebbnets.rsgn import model as M
from hebbnets.rsgn.model import RSGN, RSGNConfig


def _built(dtype=torch.float64, **cfg):
    base = dict(n_nodes=64, k=6, d_hidden=8, n_steps=3, ignite_frac=0.06, progress=False)
    m = RSGN(RSGNConfig(**{**base, **cfg}), seed=0)
    torch.manual_seed(0)
    m.spec = DataSpec((12, 6), (), 4)
    m._build(m.spec)
    m = m.to(dtype)
    with torch.no_grad():
        m.alive[::3, 1] = False
        m.affinity.normal_(0, 1)
        m.temperature.fill_(0.5)
    return m


def _tokens(m, n=6):
    g = torch.Generator().manual_seed(3)
    return m._tokens(torch.randn(n, 12, 6, generator=g, dtype=torch.float64), None)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nearest_t_equals_the_pairwise_minimum(dtype):
    g = torch.Generator().manual_seed(0)
    x = G.to_ball(torch.randn(5, 40, 3, generator=g, dtype=dtype))  # (B, T, d) sparks
    y = G.to_ball(1.5 * torch.randn(300, 3, generator=g, dtype=dtype))  # (N, d) nodes, some near the boundary
    t, arg = G.nearest_t(x, y)
    ref_t, ref_arg = G._pairwise_t(x, y).min(dim=1)
    assert t.shape == (5, 300) and arg.shape == (5, 300)
    # against the truth in float64: the chosen spark is a nearest one (near-ties may pick the other)
    # and its t is the exact proxy of that pair
    truth = G._pairwise_t(x.double(), y.double())  # (B, T, N)
    best = truth.min(dim=1).values
    chosen = truth.gather(1, arg[:, None, :]).squeeze(1)
    tol = dict(rtol=1e-4, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(chosen, best, **tol)
    torch.testing.assert_close(t.double(), chosen, **tol)
    if dtype == torch.float64:
        assert torch.equal(arg, ref_arg)
        torch.testing.assert_close(t, ref_t, **tol)


def test_dense_ignition_equals_the_reference_ignition():
    m = _built(n_nodes=200)
    tok = _tokens(m)
    sparks = G.to_ball(m.spark(tok)).detach()
    p = m.positions().detach()
    t_f, a_f = m.nearest_spark(sparks, p, "dense")
    t_r, a_r = m.nearest_spark(sparks, p, "reference")
    assert torch.equal(a_f, a_r)
    torch.testing.assert_close(t_f, t_r, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cfg", [dict(), dict(surrogate=True, readout="steps"), dict(max_active_frac=0.03)])
def test_flat_buffer_rows_equal_sorted_rows(cfg, monkeypatch):
    m = _built(**cfg).train()
    tok = _tokens(m)
    params = [*m.transform.parameters(), m.embed.weight, *m.spark.parameters()]
    outs = []
    for limit in (M.DENSE_INDEX_MAX, 0):  # the flat buffer, then sort and binary search
        monkeypatch.setattr(M, "DENSE_INDEX_MAX", limit)
        o, trace = m.propagate(tok, "sparse")
        r = torch.randn(o.shape[1], generator=torch.Generator().manual_seed(1), dtype=o.dtype)
        outs.append((o, trace, m._batch, torch.autograd.grad((o * r).sum(), params)))
    (o1, t1, b1, g1), (o2, t2, b2, g2) = outs
    assert torch.equal(o1, o2)
    for a, b in zip(t1, t2):
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert torch.equal(b1["fired"], b2["fired"])
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_lookup_paths_agree_and_return_zero_for_absent_ids():
    ids = torch.tensor([1, 4, 5, 9])
    values = torch.tensor([0.1, 0.4, 0.5, 0.9])
    query = torch.tensor([[0, 1, 4], [5, 7, 9]])
    want = torch.tensor([[0.0, 0.1, 0.4], [0.5, 0.0, 0.9]])
    assert torch.equal(M._lookup(ids, values, query), want)
    assert torch.equal(M._lookup(ids, values, query, n_flat=10), want)
    cand, (at,) = M._rows_of((torch.tensor([4, 1]), torch.tensor([9, 4, 2])), (torch.tensor([2, 9]),), 10)
    cand2, (at2,) = M._rows_of((torch.tensor([4, 1]), torch.tensor([9, 4, 2])), (torch.tensor([2, 9]),), 0)
    assert torch.equal(cand, torch.tensor([1, 2, 4, 9])) and torch.equal(cand, cand2)
    assert torch.equal(at, torch.tensor([1, 3])) and torch.equal(at, at2)


def test_a_fit_is_the_same_through_either_row_lookup(monkeypatch):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, 12, 6, generator=g)
    split = hn.Split(x, torch.arange(40) % 4)
    preds = []
    for limit in (M.DENSE_INDEX_MAX, 0):
        monkeypatch.setattr(M, "DENSE_INDEX_MAX", limit)
        m = hn.models.make("rsgn", n_nodes=64, k=6, d_hidden=8, n_steps=2, epochs=2, batch_size=10, progress=False)
        preds.append(m.fit(split).predict(x))
    assert torch.equal(preds[0], preds[1])


def test_batched_receptive_field_equals_the_gathered_one():
    m = _built(pool_sigma=0.7)
    tok = _tokens(m, n=5)
    p = m.positions()
    ign = m.ignite(tok, p)
    emb = m.embed(tok)
    b, i = ign.idx // 64, ign.idx % 64
    per = ign.idx.shape[0] // 5
    torch.testing.assert_close(m.receptive_field(ign.sparks, emb, b, p[i], per),
                               m.receptive_field(ign.sparks, emb, b, p[i]), rtol=1e-12, atol=1e-14)


def _hyperbolic_data(seed, n_keys, n_queries, spread=0.5, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    keys = G.to_ball(spread * torch.randn(n_keys, 3, generator=g, dtype=torch.float64) + offset)
    q = G.to_ball(0.4 * torch.randn(n_queries, 3, generator=g, dtype=torch.float64))
    return keys.numpy(), q.numpy()


@pytest.mark.parametrize("seed,spread,offset,n_low,t_limit", [
    (0, 0.5, 0.0, 40, 0.05), (1, 0.2, 0.3, 1, 0.01), (2, 1.5, 0.0, 300, 0.5),  # keys near the boundary too
    (3, 0.3, -0.2, 2000, -float("inf")), (4, 0.3, 0.0, 17, 1e-9), (5, 0.1, 0.5, 64, 10.0),
    (6, 0.3, 0.0, 100, -float("inf"))])
def test_bounded_nearest_kdtree_keeps_what_ignition_reads(seed, spread, offset, n_low, t_limit):
    keys, q = _hyperbolic_data(seed, 300, 2000, spread, offset)
    t_ref, i_ref = G.nearest_kdtree(keys, q)
    t, i = G.nearest_kdtree_bounded(keys, G.QueryGroups(q, size=16), n_low, t_limit)
    exact = i >= 0
    if seed in (0, 1, 4, 6):
        assert exact.sum() < (0.1 if seed == 6 else 0.9) * len(q)  # the bounds leave queries out (not vacuous) ...
    assert np.array_equal(t[exact], t_ref[exact]) and np.array_equal(i[exact], i_ref[exact])  # ... the rest exact
    assert (t >= t_ref).all()  # an upper bound (or inf) elsewhere
    # the n_low smallest, their t and their key, and every query's side of t_limit (in float32 too)
    for dt in (np.float64, np.float32):
        low_ref, low = np.argsort(t_ref.astype(dt), kind="stable")[:n_low], np.argsort(t.astype(dt), kind="stable")[:n_low]
        assert np.array_equal(low_ref, low) and exact[low].all()
        assert np.array_equal(t_ref.astype(dt) <= dt(t_limit), t.astype(dt) <= dt(t_limit))


def test_query_groups_hold_every_query_once_and_measure_their_distance_to_the_centre():
    _, q = _hyperbolic_data(0, 10, 1000)
    grp = G.QueryGroups(q, size=32)
    assert np.bincount(grp.group).max() == 32 and grp.centre.shape == (32, 3)  # ceil(1000 / 32) groups
    np.testing.assert_allclose(grp.radius, np.linalg.norm(q - grp.centre[grp.group], axis=1))
    np.testing.assert_allclose(grp.one_minus, 1 - (q * q).sum(1))
    code_sorted = np.sort(grp.group)
    assert np.array_equal(code_sorted, np.arange(1000) // 32)


@pytest.mark.parametrize("cfg", [dict(), dict(floor=0.3, ignite_frac=0.3), dict(max_active_frac=0.03, ignite_frac=0.5)])
def test_ignition_from_the_bounded_search_equals_the_full_search(cfg, monkeypatch):
    m = _built(n_nodes=400, ignition="kdtree", **cfg)
    tok = _tokens(m)
    p = m.positions()
    ign = m.ignite(tok, p)
    with monkeypatch.context() as mp:  # the reference: every node's nearest spark
        mp.setattr(RSGN, "ignition_search", lambda self, s, q, method=None: self.nearest_spark(s, q, "kdtree"))
        ref = m.ignite(tok, p)
    assert torch.equal(ign.idx, ref.idx) and torch.equal(ign.token, ref.token)
    assert ign.pre_cap == ref.pre_cap and 0 < ign.pre_cap < 1
    torch.testing.assert_close(ign.g, ref.g, rtol=0, atol=0)
    t, arg = m.ignition_search(ign.sparks.detach(), p.detach())
    if m.config.ignite_frac < 0.5:
        assert bool((arg < 0).any())  # some nodes were left out by their bounds: not vacuous


@pytest.mark.parametrize("cfg", [dict(), dict(max_active_frac=0.03), dict(readout="steps"), dict(readout="last"),
                                 dict(floor=0.3, level_sign="code"), dict(floor=0.0), dict(inhibition=0.0),
                                 dict(pool_sigma=0.7, token_injection=True), dict(surrogate=True),
                                 dict(slow_grad=True)])
def test_fast_sparse_step_equals_the_reference_step(cfg, monkeypatch):
    m = _built(**cfg).train()
    tok = _tokens(m)
    params = [*m.transform.parameters(), *m.norm.parameters(), m.embed.weight, *m.spark.parameters(),
              *m.head.parameters(), *(q for q in (m.pos, m.theta, m.affinity) if q.requires_grad)]
    monkeypatch.setattr(M, "MESSAGE_CHUNK", 5)  # the fused messages in several chunks
    outs = []
    for fast in (True, False):
        monkeypatch.setattr(M, "KEPT_STATES_ONLY", fast)
        monkeypatch.setattr(M, "INHIBIT_ACTIVE_ONLY", fast)
        monkeypatch.setattr(M, "SENDER_WEIGHTS_ONCE", fast)
        o, trace = m.propagate(tok, "sparse")
        loss = torch.nn.functional.cross_entropy(m.head(o), torch.arange(o.shape[0]) % 4)
        outs.append((loss, o, trace, m._batch, dict(m.last_stats), torch.autograd.grad(loss, params)))
    (l1, o1, t1, b1, s1, g1), (l2, o2, t2, b2, s2, g2) = outs
    torch.testing.assert_close(l1, l2, rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(o1, o2, rtol=1e-13, atol=1e-15)
    for a, b in zip(t1, t2):
        assert torch.equal(a[0], b[0])
        torch.testing.assert_close(a[1], b[1], rtol=1e-13, atol=1e-15)
    assert torch.equal(b1["fired"], b2["fired"]) and s1 == s2
    for a, b in zip(b1["coact"], b2["coact"]):
        torch.testing.assert_close(a, b, rtol=1e-13, atol=1e-15)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-13)
    assert any(float(g.abs().sum()) > 0 for g in g1[:2])  # the transform gets gradients: not vacuous
    assert sum(len(a[0]) for a in t1[1:]) > 0


def test_inhibition_of_non_zeros_equals_inhibition_of_every_candidate(monkeypatch):
    g = torch.Generator().manual_seed(0)
    n, k = 50, 5
    nbr = torch.randint(0, n, (n, k), generator=g)
    ids = torch.randperm(3 * n, generator=g)[:70].sort().values
    alpha = torch.rand(70, generator=g, dtype=torch.float64)
    alpha = (alpha * (alpha > 0.4)).requires_grad_()
    outs = []
    for fast in (True, False):
        monkeypatch.setattr(M, "INHIBIT_ACTIVE_ONLY", fast)
        out = M.inhibit_sparse(ids, alpha, nbr, 4.0, 0.4)
        outs.append((out, torch.autograd.grad((out * torch.arange(70.0, dtype=torch.float64)).sum(), alpha)[0]))
    torch.testing.assert_close(outs[0][0], outs[1][0], rtol=0, atol=0)
    torch.testing.assert_close(outs[0][1], outs[1][1], rtol=1e-14, atol=1e-15)
    assert 0 < int((outs[0][0] > 0).sum()) < int((alpha > 0).sum())  # the floor zeroes some: not vacuous


def test_fused_messages_equal_the_gathered_products(monkeypatch):
    monkeypatch.setattr(M, "MESSAGE_CHUNK", 7)  # several chunks, the last one short
    g = torch.Generator().manual_seed(0)
    h = torch.randn(9, 5, generator=g, dtype=torch.float64, requires_grad=True)
    coef = torch.rand(40, generator=g, dtype=torch.float64, requires_grad=True)
    row, to = torch.randint(0, 9, (40,), generator=g), torch.randint(0, 6, (40,), generator=g)
    w = torch.randn(6, 5, generator=g, dtype=torch.float64)
    fused = M._Messages.apply(coef, h, row, to, 6)
    ref = torch.zeros(6, 5, dtype=torch.float64).index_add(0, to, coef[:, None] * h[row])
    assert torch.equal(fused, ref)  # the same sums in the same order
    for a, b in zip(torch.autograd.grad((fused * w).sum(), (coef, h)), torch.autograd.grad((ref * w).sum(), (coef, h))):
        torch.testing.assert_close(a, b, rtol=1e-14, atol=1e-15)
    torch.autograd.gradcheck(lambda c, x: M._Messages.apply(c, x, row, to, 6), (coef, h))


def test_query_groups_reject_bad_positions():
    import numpy as np

    from hebbnets.rsgn.geometry import QueryGroups

    for bad in (np.zeros((0, 3)), np.zeros(3), np.array([[0.1, np.nan, 0.0]])):
        with pytest.raises(ValueError, match="q:"):
            QueryGroups(bad)
    with pytest.raises(ValueError, match="size"):
        QueryGroups(np.zeros((4, 3)), size=0)
