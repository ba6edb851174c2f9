"""The sparse RSGN's fast paths against their references: the one-matmul nearest spark and the
flat-buffer row lookup of a sparse step."""
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
