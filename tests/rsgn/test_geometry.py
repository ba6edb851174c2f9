import math

import geoopt
import pytest
import torch

from hebbnets.rsgn import geometry as G


def _points(n, d=3, scale=0.5, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return G.to_ball(scale * torch.randn(n, d, generator=g, dtype=dtype))


def test_distance_matches_lorentz_model():
    x, y = _points(200, seed=1, scale=1.5), _points(200, seed=2, scale=1.5)
    torch.testing.assert_close(G.dist(x, y), G.lorentz_dist(x, y), rtol=1e-8, atol=1e-8)
    # geoopt's Moebius-form distance agrees away from the boundary
    a, b = _points(200, seed=1, scale=0.5), _points(200, seed=2, scale=0.5)
    torch.testing.assert_close(G.dist(a, b), G.BALL.dist(a, b), rtol=1e-8, atol=1e-8)
    torch.testing.assert_close(G.pairwise_dist(x[:20], y[:30]), G.lorentz_dist(x[:20, None], y[None, :30]),
                               rtol=1e-7, atol=1e-6)


def test_min_dist_matches_pairwise_min():
    x, y = _points(7 * 20, seed=12).reshape(7, 20, 3), _points(30, seed=13)
    d, arg = G.min_dist(x, y)
    ref = G.pairwise_dist(x, y)  # (7, 20, 30)
    torch.testing.assert_close(d, ref.min(1).values)
    assert torch.equal(arg, ref.argmin(1))


def test_distance_symmetric_and_zero_on_diagonal():
    x, y = _points(100, seed=3), _points(100, seed=4)
    torch.testing.assert_close(G.dist(x, y), G.dist(y, x))
    assert G.dist(x, x).abs().max() < 1e-6
    d = G.pairwise_dist(x, x)
    torch.testing.assert_close(d, d.T)


def test_triangle_inequality():
    x, y, z = _points(500, seed=5, scale=1.0), _points(500, seed=6, scale=1.0), _points(500, seed=7, scale=1.0)
    assert bool((G.dist(x, z) <= G.dist(x, y) + G.dist(y, z) + 1e-9).all())


def test_exp_log_round_trip():
    x = _points(100, seed=8, scale=0.3)
    g = torch.Generator().manual_seed(9)
    u = 0.2 * torch.randn(100, 3, generator=g, dtype=torch.float64)
    torch.testing.assert_close(G.logmap(x, G.expmap(x, u)), u, rtol=1e-6, atol=1e-8)
    y = _points(100, seed=10)
    torch.testing.assert_close(G.expmap(x, G.logmap(x, y)), y, rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(G.logmap0(G.expmap0(u)), u, rtol=1e-6, atol=1e-8)
    # the geodesic distance is the tangent norm at the start point (Riemannian metric)
    torch.testing.assert_close(G.dist(x, G.expmap(x, u)), G.BALL.norm(x, u), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", [G.dist, lambda a, b: G.pairwise_dist(a, b).diagonal()])
def test_finite_gradients_for_coincident_points(fn):
    for x0 in (torch.zeros(4, 3), 0.3 * torch.ones(4, 3), torch.tensor([[0.99, 0.0, 0.0]] * 4)):
        x = x0.clone().requires_grad_()
        y = x0.clone().requires_grad_()
        fn(x, y).sum().backward()
        assert torch.isfinite(x.grad).all() and torch.isfinite(y.grad).all()


def test_knn_matches_brute_force_and_excludes_self():
    p = _points(300, seed=11, scale=1.0).float()
    nb = G.knn(p, 7, block=64)  # several blocks
    d = G.lorentz_dist(p.double()[:, None], p.double()[None])
    d.fill_diagonal_(float("inf"))
    ref = d.topk(7, dim=1, largest=False).indices
    assert nb.shape == (300, 7)
    assert not bool((nb == torch.arange(300)[:, None]).any())
    # same neighbour sets (ties are measure-zero for random points)
    assert torch.equal(nb.sort(1).values, ref.sort(1).values)
    with pytest.raises(ValueError, match="k"):
        G.knn(p, 300)


def _with_ties(n, seed, scale):
    p = _points(n, seed=seed, scale=scale)
    return torch.cat([p, p[: n // 3], p[: n // 6]])  # exact duplicates: exact distance ties


def _reference_knn(p, k):
    # the plain definition: all distances in float64, self excluded, sorted by (distance, index)
    t = ((p[:, None] - p[None]) ** 2).sum(-1) / ((1 - (p * p).sum(-1))[:, None] * (1 - (p * p).sum(-1))[None])
    t.fill_diagonal_(float("inf"))
    return torch.sort(t, dim=1, stable=True).indices[:, :k]


@pytest.mark.parametrize("scale", [0.3, 1.5])  # a dense cluster; points near the boundary
def test_knn_kdtree_equals_brute_force_including_ties(scale):
    p = _with_ties(400, seed=21, scale=scale)
    for k in (1, 5, 16):
        ref = _reference_knn(p, k)
        assert torch.equal(G.knn(p, k, block=97), ref)  # the brute-force builder, ties included
        assert torch.equal(G.knn_kdtree(p, k, chunk=130), ref)  # the tree, in several query chunks
    with pytest.raises(ValueError, match="k"):
        G.knn_kdtree(p, p.shape[0])


def test_hyperbolic_ball_is_a_euclidean_ball():
    x = _points(50, seed=22, scale=1.0)
    g = torch.Generator().manual_seed(23)
    for r in (0.05, 0.7, 3.0):
        t = torch.full((50,), math.sinh(r / 2) ** 2, dtype=torch.float64)  # d = 2 asinh(sqrt t) = r
        centre, radius = G.hyperbolic_ball(x.numpy(), t.numpy())
        u = torch.randn(50, 8, 3, generator=g, dtype=torch.float64)
        u = u / G.BALL.norm(x[:, None], u, keepdim=True) * r  # tangent vectors of Riemannian length r
        y = G.expmap(x[:, None].expand_as(u), u)  # points at geodesic distance r from x
        torch.testing.assert_close(G.dist(x[:, None], y), torch.full((50, 8), r, dtype=torch.float64))
        e = (y - torch.from_numpy(centre)[:, None]).norm(dim=-1)  # their Euclidean distance to the centre
        torch.testing.assert_close(e, torch.from_numpy(radius)[:, None].expand(50, 8), rtol=1e-7, atol=1e-9)


def test_nearest_kdtree_matches_brute_force():
    keys = _points(60, seed=24, scale=1.2)
    keys = torch.cat([keys, keys[:10]])  # ties: the smaller index wins
    q = torch.cat([_points(500, seed=25, scale=1.2), keys[:5]])
    t, idx = G.nearest_kdtree(keys.numpy(), q.numpy())
    ref = ((q[:, None] - keys[None]) ** 2).sum(-1) / ((1 - (q * q).sum(-1))[:, None] * (1 - (keys * keys).sum(-1))[None])
    r_t, r_idx = torch.sort(ref, dim=1, stable=True)
    assert torch.equal(torch.from_numpy(idx), r_idx[:, 0])
    torch.testing.assert_close(torch.from_numpy(t), r_t[:, 0])
    assert idx[-5:].tolist() == list(range(5))


def _assert_inside(p):
    assert torch.isfinite(p).all()
    assert bool((p.norm(dim=-1) < 1.0).all())


def _adversarial_grad(g, shape):
    # huge, random-sign gradients that mostly point outward (float32; 1e15**2 still fits)
    return 1e15 * (torch.randn(shape, generator=g) + 3.0)


@pytest.mark.parametrize("opt_name", ["adam", "sgd"])
def test_expmap0_parametrisation_survives_adversarial_gradients(opt_name):
    g = torch.Generator().manual_seed(0)
    z = torch.nn.Parameter(torch.randn(8, 3, generator=g))
    opt = torch.optim.Adam([z], lr=1.0) if opt_name == "adam" else torch.optim.SGD([z], lr=1e-3)
    for step in range(10_000):
        if step % 1000 == 0:  # the real forward/backward path stays finite too
            p = G.to_ball(z)
            (-1e6 * G.pairwise_dist(p, p).sum()).backward()
            assert torch.isfinite(z.grad).all()
        z.grad = _adversarial_grad(g, z.shape)
        opt.step()
    p = G.to_ball(z).detach()
    _assert_inside(p)
    assert torch.isfinite(G.pairwise_dist(p, p)).all() and torch.isfinite(G.knn(p, 3).float()).all()


@pytest.mark.parametrize("opt_name", ["sgd"])  # "adam" passes too; left out to keep the suite fast
def test_riemannian_optimiser_survives_adversarial_gradients(opt_name):
    g = torch.Generator().manual_seed(1)
    p = geoopt.ManifoldParameter(G.to_ball(0.3 * torch.randn(8, 3, generator=g)), manifold=G.BALL)
    opt = (geoopt.optim.RiemannianAdam([p], lr=0.5) if opt_name == "adam"
           else geoopt.optim.RiemannianSGD([p], lr=1e-3))
    for step in range(10_000):
        if step % 1000 == 0:
            (-1e8 * G.dist(p, torch.zeros_like(p)).sum()).backward()
            assert torch.isfinite(p.grad).all()
        p.grad = _adversarial_grad(g, p.shape)
        opt.step()
    _assert_inside(p.detach())
    assert torch.isfinite(G.pairwise_dist(p.detach(), p.detach())).all()
