"""Batched Gram-form FISTA against scikit-learn's lasso_cd and the plain per-sample ISTA loop."""
import importlib

import numpy as np
import pytest
import torch
from sklearn.decomposition import sparse_encode

from hebbnets.vn import (
    fista, fista_gram, ista_reference, keep_topk, largest_eigenvalue, lasso_optimality_residual, soft_threshold,
)
from hebbnets.vn.fista import (
    LassoTerm, fista_working_set, gershgorin_bound, _factor_operator, choose_product_form, masked_lasso, operator_power_estimate, product_form_costs,
)


def _problem(n=20, k=30, b=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    S = torch.randn(n, k, generator=gen, dtype=torch.float64)
    S = S / S.norm(dim=0)
    codes = torch.zeros(b, k, dtype=torch.float64)
    for i in range(b):
        idx = torch.randperm(k, generator=gen)[:3]
        codes[i, idx] = torch.rand(3, generator=gen, dtype=torch.float64) + 0.5
    x = codes @ S.T + 0.05 * torch.randn(b, n, generator=gen, dtype=torch.float64)
    return S, x


def _objective(S, x, g, lam):
    return 0.5 * ((x - g @ S.T) ** 2).sum(-1) + lam * g.abs().sum(-1)


@pytest.mark.parametrize("nonneg, monotone", [(False, True), (True, True), (False, False)])
def test_objective_matches_sklearn_lasso_cd(nonneg, monotone):
    S, x = _problem()
    lam = 0.1
    sk = sparse_encode(x.numpy(), S.T.numpy(), algorithm="lasso_cd", alpha=lam, max_iter=100000, positive=nonneg)
    res = fista_gram(S.T @ S, x @ S, lam, max_iter=20000, tol=1e-9, nonneg=nonneg, monotone=monotone)
    ours = _objective(S, x, res.codes, lam)
    theirs = _objective(S, x, torch.from_numpy(sk), lam)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-7)
    # optimality, not a stopping test: lam = 0.1, so 1e-6 is 0.001 % of it
    assert float(lasso_optimality_residual(S.T @ S, x @ S, res.codes, lam, nonneg).max()) < 1e-6
    if nonneg:
        assert bool((res.codes >= 0).all())


def test_batched_fista_agrees_with_plain_ista_loop():
    S, x = _problem(seed=1)
    gen = torch.Generator().manual_seed(3)
    U = torch.randn(12, S.shape[1], generator=gen, dtype=torch.float64) / 12**0.5
    h = torch.randn(x.shape[0], 12, generator=gen, dtype=torch.float64)
    lam, beta = 0.05, 0.7
    G = S.T @ S + beta * U.T @ U
    b = x @ S + beta * h @ U
    res = fista_gram(G, b, lam, max_iter=20000, tol=1e-9)
    ref = ista_reference(S, x, lam, n_iter=4000, U=U, h=h, beta=beta)
    r_fast, r_ref = (lasso_optimality_residual(G, b, c, lam) for c in (res.codes, ref))
    assert float(r_fast.max()) < 1e-6 and float(r_ref.max()) < 1e-6
    f = lambda g: (0.5 * (g @ G) - b).mul(g).sum(-1) + lam * g.abs().sum(-1)  # noqa: E731
    torch.testing.assert_close(f(res.codes), f(ref), rtol=1e-9, atol=0)
    # G is positive definite (42 rows for 30 atoms): the objective is mu-strongly convex, the
    # solution unique, and a point whose subgradient has norm <= sqrt(K) r lies within
    # sqrt(K) r / mu of it; so the two solutions are this close, whatever the machine
    mu = float(torch.linalg.eigvalsh(G).min())
    assert mu > 1e-5
    bound = G.shape[0] ** 0.5 * (r_fast + r_ref) / mu  # (B,)
    assert bool(((res.codes - ref).norm(dim=-1) <= bound + 1e-12).all())
    assert float(bound.max()) < 1e-2  # the bound is tight enough to mean something
    # exact zeros where the solution is strictly inside the dead zone (|grad| < lam with a
    # margin): the prox produces true zeros there, not small numbers
    dead = (ref @ G - b).abs() < 0.99 * lam
    assert bool(dead.any()) and bool((res.codes[dead] == 0).all()) and bool((ref[dead] == 0).all())


def test_per_sample_gram_matches_reduced_problem():
    """A per-sample mask is the same LASSO with the masked rows deleted."""
    S, x = _problem(seed=2)
    mask = (torch.rand(x.shape, generator=torch.Generator().manual_seed(5)) > 0.3).double()
    G = torch.einsum("nk,bn,nj->bkj", S, mask, S)
    b = (x * mask) @ S
    res = fista_gram(G, b, 0.05, max_iter=20000, tol=1e-9)
    for i in range(x.shape[0]):
        keep = mask[i].bool()
        S_i, x_i = S[keep], x[i : i + 1, keep]  # the masked rows deleted: fewer rows than atoms
        ref = ista_reference(S_i, x_i, 0.05, n_iter=4000)
        # the per-sample Gram solution is optimal for the reduced problem, built independently
        assert float(lasso_optimality_residual(S_i.T @ S_i, x_i @ S_i, res.codes[i : i + 1], 0.05).max()) < 1e-6
        torch.testing.assert_close(_objective(S_i, x_i, res.codes[i : i + 1], 0.05),
                                   _objective(S_i, x_i, ref, 0.05), rtol=1e-7, atol=0)


@pytest.mark.parametrize("topk", [0, 2])
def test_objective_is_non_increasing(topk):
    S, x = _problem(seed=4)
    res = fista_gram(S.T @ S, x @ S, 0.02, max_iter=300, tol=1e-14, topk=topk, record_history=True)
    diffs = res.history[1:] - res.history[:-1]
    assert bool((diffs <= 1e-12 * res.history[0].abs().max()).all())
    if topk:
        assert int((res.codes != 0).sum(-1).max()) <= topk


def test_optimality_residual_is_zero_at_the_solution_and_measures_violations():
    # G = I: the solution is soft_threshold(b, lam) in closed form
    b = torch.tensor([[2.0, -0.3, 0.0, -1.5]], dtype=torch.float64)
    G = torch.eye(4, dtype=torch.float64)
    g = soft_threshold(b, 0.5)
    assert float(lasso_optimality_residual(G, b, g, 0.5)) == 0.0
    # an active entry off by 0.25 violates d + lam sign(g) = 0 by 0.25
    assert float(lasso_optimality_residual(G, b, g + torch.tensor([[0.25, 0, 0, 0]]), 0.5)) == pytest.approx(0.25)
    # a zeroed active entry: |d| - lam = 2.0 - 0.5
    assert float(lasso_optimality_residual(G, b, torch.zeros_like(b), 0.5)) == pytest.approx(1.5)
    # nonneg: the negative entry's gradient (1.5) satisfies d + lam >= 0 at zero
    gp = soft_threshold(b, 0.5, nonneg=True)
    assert float(lasso_optimality_residual(G, b, gp, 0.5, nonneg=True)) == 0.0
    # the batched (B, K, K) form gives the same
    assert float(lasso_optimality_residual(G[None], b, g + 0.1, 0.5)) == pytest.approx(
        float(lasso_optimality_residual(G, b, g + 0.1, 0.5)))


def test_soft_threshold_gives_exact_zeros():
    z = torch.tensor([-2.0, -0.5, 0.0, 0.3, 1.5])
    torch.testing.assert_close(soft_threshold(z, 0.5), torch.tensor([-1.5, 0.0, 0.0, 0.0, 1.0]))
    torch.testing.assert_close(soft_threshold(z, 0.5, nonneg=True), torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0]))
    assert bool((soft_threshold(z, 0.5)[1:4] == 0).all())


def test_keep_topk_keeps_largest_magnitudes():
    g = torch.tensor([[0.1, -3.0, 2.0, 0.5], [1.0, 0.0, 0.0, 0.0]])
    out = keep_topk(g, 2)
    torch.testing.assert_close(out, torch.tensor([[0.0, -3.0, 2.0, 0.0], [1.0, 0.0, 0.0, 0.0]]))


def test_power_iteration_matches_eigvalsh():
    S, _ = _problem(seed=6)
    G = S.T @ S
    true = float(torch.linalg.eigvalsh(G).max())
    est = float(largest_eigenvalue(G))
    # the Rayleigh quotient approaches from below; fista_gram's 1% step margin covers the gap
    assert true * (1 - 1e-4) <= est <= true * (1 + 1e-12)
    Gb = torch.stack([G, 2 * G])
    torch.testing.assert_close(largest_eigenvalue(Gb), torch.linalg.eigvalsh(Gb)[:, -1], rtol=1e-4, atol=0)


def test_plain_fista_refuses_topk():
    with pytest.raises(ValueError, match="monotone"):
        fista_gram(torch.eye(3), torch.ones(2, 3), 0.1, topk=1, monotone=False)


# -- properties of the proximal maps (hypothesis) ------------------------------------------------
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

_rows = arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 9)),
               elements=st.floats(-10, 10, allow_nan=False, allow_subnormal=False))


@settings(max_examples=60, deadline=None)
@given(z=_rows, thresh=st.floats(0, 5), nonneg=st.booleans())
def test_soft_threshold_is_the_l1_prox(z, thresh, nonneg):
    """p = prox(z) satisfies the optimality condition z - p in thresh * d|p| (+ normal cone)."""
    z = torch.from_numpy(z)
    p = soft_threshold(z, thresh, nonneg)
    r = z - p
    on = p != 0
    assert torch.allclose(r[on], thresh * torch.sign(p[on]), atol=1e-9)
    if nonneg:
        assert bool((p >= 0).all()) and bool((r[~on] <= thresh + 1e-9).all())
    else:
        assert bool((r[~on].abs() <= thresh + 1e-9).all())


@settings(max_examples=60, deadline=None)
@given(g=_rows, k=st.integers(0, 10))
def test_keep_topk_properties(g, k):
    g = torch.from_numpy(g)
    out = keep_topk(g, k)
    kept = out != 0
    if 0 < k < g.shape[1]:
        assert int(kept.sum(-1).max()) <= k
        # every dropped entry is no larger than every kept one in the same row
        for row, orow in zip(g, out):
            keep = orow != 0
            if keep.any() and (~keep).any():
                assert float(row[~keep].abs().max()) <= float(row[keep].abs().min())
    else:
        assert torch.equal(out, g)
    assert torch.equal(out[kept], g[kept])


@pytest.mark.parametrize(
    "G, b, lam, word",
    [
        (torch.eye(3), torch.ones(3), 0.1, "b"),
        (torch.eye(3), torch.ones(0, 3), 0.1, "b"),
        (torch.eye(4), torch.ones(2, 3), 0.1, "G"),
        (torch.eye(3), torch.ones(2, 3), -1.0, "lam"),
        (torch.eye(3), torch.full((2, 3), float("nan")), 0.1, "b"),
    ],
)
def test_fista_rejects_bad_input(G, b, lam, word):
    with pytest.raises(ValueError, match=rf"^{word}:"):
        fista_gram(G, b, lam)


def test_operator_form_solves_matrix_codes_like_the_flattened_gram_form():
    """``fista`` with a factorised operator on (B, Ku, Ks) codes equals ``fista_gram`` on the
    flattened problem with the Kronecker Gram matrix formed explicitly (the slow reference)."""
    gen = torch.Generator().manual_seed(7)
    A, C = torch.randn(5, 4, generator=gen, dtype=torch.float64), torch.randn(6, 3, generator=gen, dtype=torch.float64)
    AtA, CtC = A.T @ A, C.T @ C
    b = torch.randn(8, 4, 3, generator=gen, dtype=torch.float64)
    op = lambda G: AtA @ G @ CtC  # noqa: E731  (B, 4, 3)
    lip = float(torch.linalg.eigvalsh(AtA).max() * torch.linalg.eigvalsh(CtC).max())
    res = fista(op, b, 0.3, lip, max_iter=5000, tol=1e-9)
    K = torch.kron(AtA, CtC)  # (12, 12): row-major flattening of G pairs with kron(AtA, CtC)
    ref = fista_gram(K, b.reshape(8, -1), 0.3, max_iter=5000, tol=1e-9)
    assert res.codes.shape == (8, 4, 3)
    torch.testing.assert_close(res.objective, ref.objective, rtol=1e-9, atol=0)
    assert float(lasso_optimality_residual(op, b, res.codes, 0.3).max()) < 1e-6
    assert float(lasso_optimality_residual(K, b.reshape(8, -1), res.codes.reshape(8, -1), 0.3).max()) < 1e-6
    top = fista(op, b, 0.3, lip, max_iter=200, topk=2)
    assert int((top.codes != 0).reshape(8, -1).sum(-1).max()) <= 2


@pytest.mark.parametrize("form", ["gram", "per_sample", "factor"])
def test_masked_lasso_forms_solve_the_reduced_problems(form):
    """Every product form of a masked two-term LASSO is optimal for each sample's problem with
    the masked rows deleted, built independently (explicit design, plain per-sample ISTA)."""
    S, x = _problem(seed=7)
    gen = torch.Generator().manual_seed(8)
    U = torch.randn(10, S.shape[1], generator=gen, dtype=torch.float64) / 10**0.5
    h = torch.randn(x.shape[0], 10, generator=gen, dtype=torch.float64)
    x_mask = (torch.rand(x.shape, generator=gen) > 0.3).double()
    h_mask = (torch.rand(10, generator=gen) > 0.2).double()  # one pattern for every sample
    lam, beta = 0.05, 0.7
    terms = [LassoTerm(1.0, S, x, x_mask), LassoTerm(beta, U, h, h_mask)]
    res = masked_lasso(terms, lam, max_iter=20000, tol=1e-9, form=form)
    assert res.form == form
    for i in range(x.shape[0]):
        keep_x, keep_h = x_mask[i].bool(), h_mask.bool()
        A = torch.cat([S[keep_x], beta**0.5 * U[keep_h]])  # (rows, K): the stacked, unmasked design
        t = torch.cat([x[i, keep_x], beta**0.5 * h[i, keep_h]])[None]
        G_i, b_i = A.T @ A, t @ A
        assert float(lasso_optimality_residual(G_i, b_i, res.codes[i:i + 1], lam).max()) < 1e-6
        ours, ref = _objective(A, t, res.codes[i:i + 1], lam), _objective(A, t, ista_reference(A, t, lam, n_iter=4000), lam)
        # the plain ISTA loop approaches the optimum from above: ours is no worse, and close
        assert float(ours) <= float(ref) * (1 + 1e-12)
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=0)


def test_product_form_choice_by_shape():
    """The issue's case: B=256 samples, n=64 entries with per-sample masks, K=1024 atoms, where
    per-sample Gram matrices cost 7.8 s to build; the factor form is chosen. Without masks and
    with fewer atoms than twice the entries, the shared Gram matrix is."""
    B, n, K = 256, 64, 1024
    terms = [LassoTerm(1.0, torch.zeros(n, K), torch.zeros(B, n), torch.ones(B, n))]
    costs = product_form_costs(terms, 200, n_patterns=B)
    assert min(costs, key=costs.get) == "factor" == choose_product_form(terms, 200, n_patterns=B)
    assert "per_sample" not in costs  # (256, 1024, 1024) floats: over the memory cap
    mid = [LassoTerm(1.0, torch.zeros(n, 256), torch.zeros(B, n), torch.ones(B, n))]
    costs = product_form_costs(mid, 200, n_patterns=B)
    assert choose_product_form(mid, 200, n_patterns=B) == "factor" and costs["per_sample"] > 5 * costs["factor"]
    few = [LassoTerm(1.0, torch.zeros(n, 96), torch.zeros(B, n))]
    assert choose_product_form(few, 200) == "gram"
    many = [LassoTerm(1.0, torch.zeros(n, K), torch.zeros(B, n))]
    assert choose_product_form(many, 200) == "factor"  # 2 n < K: two thin GEMMs beat one K x K


def test_factor_form_lipschitz_bound_is_guaranteed():
    S, x = _problem(seed=9)
    mask = (torch.rand(x.shape, generator=torch.Generator().manual_seed(2)) > 0.5).double()
    terms = [LassoTerm(0.5, S, x, mask)]
    hessian, bound, _ = _factor_operator(terms)
    G = terms[0].gram()  # (B, K, K)
    true = torch.linalg.eigvalsh(G)[:, -1]
    assert bool((true <= bound * (1 + 1e-12)).all())
    assert float((bound / true).median()) < 2.5  # and not uselessly loose (half the rows masked)
    # the power estimate that tightens it is a Rayleigh quotient: from below, and close when run long
    short = operator_power_estimate(hessian, (x.shape[0], S.shape[1]), x.dtype, n_iter=5)
    long = operator_power_estimate(hessian, (x.shape[0], S.shape[1]), x.dtype, n_iter=2000)
    assert bool((short <= true * (1 + 1e-12)).all()) and bool((long <= true * (1 + 1e-12)).all())
    torch.testing.assert_close(long, true, rtol=1e-6, atol=0)
    v = torch.randn(x.shape[0], S.shape[1], dtype=torch.float64)
    torch.testing.assert_close(hessian(v), torch.bmm(G, v[..., None])[..., 0])


@pytest.mark.parametrize("terms, form, word", [
    ([], "auto", "terms"),
    ([LassoTerm(1.0, torch.zeros(4, 6), torch.zeros(3, 5))], "auto", "terms"),
    ([LassoTerm(1.0, torch.zeros(4, 6), torch.zeros(3, 4), torch.ones(2, 4))], "auto", "terms"),
    ([LassoTerm(-1.0, torch.zeros(4, 6), torch.zeros(3, 4))], "auto", "terms"),
    ([LassoTerm(1.0, torch.zeros(4, 6), torch.zeros(3, 4))], "dense", "form"),
    ([LassoTerm(1.0, torch.zeros(4, 6), torch.zeros(3, 4))], "per_sample", "form"),
])
def test_masked_lasso_rejects_bad_input(terms, form, word):
    with pytest.raises(ValueError, match=f"^{word}"):
        masked_lasso(terms, 0.1, form=form)


@pytest.mark.parametrize("nonneg, size", [(False, 2), (True, 2), (False, 30)])
def test_working_set_solves_the_full_problem(nonneg, size):
    """The working-set solver against the full-problem fista_gram: equal objective, and the full
    problem's KKT residual (computed from G, not from any working set) near zero, also when the
    support is larger than the first working set (size 2 for 3-sparse codes: it must grow)."""
    S, x = _problem(seed=11)
    G, b, lam = S.T @ S, x @ S, 0.05
    full = fista_gram(G, b, lam, max_iter=20000, tol=1e-10, nonneg=nonneg)
    ws = fista_working_set(G, b, lam, size=size, max_iter=20000, tol=1e-10, kkt_tol=1e-9, nonneg=nonneg)
    assert ws.converged
    assert float(lasso_optimality_residual(G, b, ws.codes, lam, nonneg).max()) < 1e-6
    torch.testing.assert_close(ws.objective, full.objective, rtol=1e-9, atol=0)
    f = (0.5 * (ws.codes @ G) - b).mul(ws.codes).sum(-1) + lam * ws.codes.abs().sum(-1)
    torch.testing.assert_close(ws.objective, f)  # the objective it reports is the full problem's
    if size == 2:
        assert int((ws.codes != 0).sum(1).max()) > 2  # the working set grew past its first size
    if nonneg:
        assert bool((ws.codes >= 0).all())


def test_working_set_warm_start_and_gershgorin_bound():
    S, x = _problem(seed=12)
    G, b, lam = S.T @ S, x @ S, 0.05
    exact = fista_working_set(G, b, lam, max_iter=20000, tol=1e-10, kkt_tol=1e-9)
    warm = fista_working_set(G, b, lam, g0=exact.codes, max_iter=20000, tol=1e-10, kkt_tol=1e-9)
    assert warm.iterations < exact.iterations / 3
    torch.testing.assert_close(warm.objective, exact.objective, rtol=1e-9, atol=0)
    blocks = torch.stack([G[:5, :5], G[3:9, 3:9][:5, :5]])
    assert bool((gershgorin_bound(blocks) >= torch.linalg.eigvalsh(blocks)[:, -1] * (1 - 1e-12)).all())


@pytest.mark.parametrize("kwargs, word", [
    (dict(G=torch.eye(3)[None].expand(2, 3, 3)), "G"), (dict(size=0), "size"), (dict(max_rounds=0), "max_rounds"),
    (dict(b=torch.zeros(0, 3)), "b"), (dict(g0=torch.zeros(2, 4)), "g0"), (dict(b=torch.full((2, 3), float("nan"))), "b"),
])
def test_working_set_rejects_bad_input(kwargs, word):
    args = {**dict(G=torch.eye(3), b=torch.ones(2, 3), lam=0.1), **kwargs}
    with pytest.raises(ValueError, match=f"^{word}"):
        fista_working_set(**args)


@pytest.mark.parametrize("every", [3, 8])
def test_stopping_tests_every_few_iterations_reach_the_same_objective(every):
    # on an accelerator the stopping test is a host-device sync, so fista tests it every few iterations
    S, x = _problem()
    G, b = S.T @ S, x @ S
    lip = largest_eigenvalue(G)
    each = fista(lambda v: v @ G, b, 0.05, lip, max_iter=2000, tol=1e-9)
    sparse = fista(lambda v: v @ G, b, 0.05, lip, max_iter=2000, tol=1e-9, check_every=every)
    assert each.converged and sparse.converged
    assert sparse.iterations % every == 0 and each.iterations <= sparse.iterations < each.iterations + every
    torch.testing.assert_close(sparse.objective, each.objective, rtol=1e-10, atol=1e-12)
    capped = fista(lambda v: v @ G, b, 0.05, lip, max_iter=10, tol=1e-9, check_every=every)
    assert capped.iterations == 10  # the budget still ends the loop
    with pytest.raises(ValueError, match="^check_every:"):
        fista(lambda v: v @ G, b, 0.05, lip, check_every=0)


def test_masked_lasso_working_set_form_solves_the_shared_gram_problem():
    """``form="working_set"`` on an unmasked two-term LASSO: optimal for the full problem (its KKT
    residual from the summed Gram matrix), objective equal to the gram form's; ``"auto"`` picks it
    only from a sparse warm start of a problem with enough atoms, and refuses it with masks or top-k."""
    gen = torch.Generator().manual_seed(3)
    n, K, B = 40, 96, 12
    S = torch.randn(n, K, generator=gen, dtype=torch.float64) / n**0.5
    U = torch.randn(10, K, generator=gen, dtype=torch.float64) / 10**0.5
    g_true = torch.zeros(B, K, dtype=torch.float64)
    g_true[torch.arange(B)[:, None], torch.randint(K, (B, 3), generator=gen)] = 1.0
    x, h = g_true @ S.T, g_true @ U.T
    terms, lam = [LassoTerm(1.0, S, x), LassoTerm(0.5, U, h)], 0.02
    G, b = S.T @ S + 0.5 * U.T @ U, x @ S + 0.5 * h @ U
    ws = masked_lasso(terms, lam, max_iter=20000, tol=1e-10, form="working_set")
    gram = masked_lasso(terms, lam, max_iter=20000, tol=1e-10, form="gram")
    assert ws.form == "working_set"
    assert float(lasso_optimality_residual(G, b, ws.codes, lam).max()) < 1e-6
    torch.testing.assert_close(ws.objective, gram.objective, rtol=1e-8, atol=1e-12)
    assert masked_lasso(terms, lam, g0=gram.codes, max_iter=500).form == "working_set"  # sparse warm start
    assert masked_lasso(terms, lam, g0=torch.ones(B, K, dtype=torch.float64), max_iter=50).form != "working_set"
    assert masked_lasso(terms, lam, max_iter=50).form != "working_set"  # nothing known without a warm start
    masked = [LassoTerm(1.0, S, x, torch.ones(B, n, dtype=torch.float64))]
    with pytest.raises(ValueError, match="^form: 'working_set' needs"):
        masked_lasso(masked, lam, form="working_set")
    with pytest.raises(ValueError, match="^form: 'working_set' needs"):
        masked_lasso(terms, lam, topk=2, form="working_set")
    with pytest.raises(ValueError, match="^g0:"):
        masked_lasso(terms, lam, g0=torch.zeros(B, K + 1, dtype=torch.float64))


def test_masked_lasso_active_estimate_picks_the_working_set_from_zeros():
    """Without a warm start, ``active`` (the atoms a sample is expected to use) decides: at most
    K / WORKING_SET_SPARSITY picks the working set, whose first set is twice the estimate, and it
    reaches the gram form's objective and the full problem's KKT conditions even when the
    estimate is too small (the set grows); a dense estimate or masks keep the cheapest form."""
    from hebbnets.vn.fista import WORKING_SET_SIZE, WORKING_SET_SPARSITY, working_set_start

    gen = torch.Generator().manual_seed(5)
    n, K, B = 40, 96, 12
    S = torch.randn(n, K, generator=gen, dtype=torch.float64) / n**0.5
    g_true = torch.zeros(B, K, dtype=torch.float64)
    g_true[torch.arange(B)[:, None], torch.randint(K, (B, 4), generator=gen)] = 1.0
    x = g_true @ S.T
    terms, lam = [LassoTerm(1.0, S, x)], 0.02
    G, b = S.T @ S, x @ S
    gram = masked_lasso(terms, lam, max_iter=20000, tol=1e-10, form="gram")
    for active in (1, 4, K // WORKING_SET_SPARSITY):
        ws = masked_lasso(terms, lam, max_iter=20000, tol=1e-10, active=active)
        assert ws.form == "working_set"
        assert float(lasso_optimality_residual(G, b, ws.codes, lam).max()) < 1e-6
        torch.testing.assert_close(ws.objective, gram.objective, rtol=1e-8, atol=1e-12)
    assert masked_lasso(terms, lam, max_iter=50, active=K // WORKING_SET_SPARSITY + 1).form != "working_set"
    assert masked_lasso(terms, lam, max_iter=50, active=2, form="gram").form == "gram"  # an explicit form rules
    masked = [LassoTerm(1.0, S, x, torch.ones(B, n, dtype=torch.float64))]
    assert masked_lasso(masked, lam, max_iter=50, active=2).form != "working_set"
    # a warm start's own sparsity outranks the estimate
    assert masked_lasso(terms, lam, g0=torch.ones(B, K, dtype=torch.float64), max_iter=50, active=2).form != "working_set"
    assert working_set_start(K, None) == WORKING_SET_SIZE and working_set_start(K, 20) == 40
    assert working_set_start(K, 1000) == K
    for bad in (-1, 2.5, True, "4"):
        with pytest.raises(ValueError, match="^active:"):
            masked_lasso(terms, lam, active=bad)


# -- the fused loop (torch.compile'd element-wise kernels) against the eager loop -----------------
@pytest.mark.parametrize("monotone", [True, False])
@pytest.mark.parametrize("nonneg", [False, True])
def test_fused_loop_reaches_the_eager_loops_iterates_and_objective(monotone, nonneg):
    from hebbnets.vn.fista import fista, largest_eigenvalue, lasso_optimality_residual

    gen = torch.Generator().manual_seed(3)
    D = torch.randn(60, 12, generator=gen, dtype=torch.float64)  # well conditioned: converges in a few hundred
    G, b = D.T @ D, torch.randn(7, 60, generator=gen, dtype=torch.float64) @ D
    lip = largest_eigenvalue(G)
    kw = dict(max_iter=3000, tol=1e-8, nonneg=nonneg, monotone=monotone)  # well above float64 noise
    eager = fista(lambda v: v @ G, b, 0.5, lip, **kw)
    fused = fista(lambda v: v @ G, b, 0.5, lip, fused=True, **kw)
    assert fused.converged and eager.converged and abs(fused.iterations - eager.iterations) <= 3
    # the same iteration up to rounding (the kernels sum in another order): equal objective
    torch.testing.assert_close(fused.objective, eager.objective, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(fused.codes, eager.codes, rtol=0, atol=1e-6)
    assert bool((fused.codes == 0).any())  # exact zeros survive the fused prox
    if not nonneg:
        assert float(lasso_optimality_residual(G, b, fused.codes, 0.5).max()) < 1e-5  # |b| ~ 10: tol 1e-8 relative


def test_fused_loop_on_matrix_codes_with_per_sample_lipschitz_and_a_warm_start():
    from hebbnets.vn.fista import fista

    gen = torch.Generator().manual_seed(4)
    U, S = torch.randn(6, 4, generator=gen, dtype=torch.float64), torch.randn(5, 3, generator=gen, dtype=torch.float64)
    A, C = U.T @ U, S.T @ S
    scale = torch.tensor([1.0, 2.0], dtype=torch.float64)[:, None, None]
    hessian = lambda v: scale * (A @ v @ C)  # noqa: E731  (B, 4, 3) matrix codes, a Hessian per sample
    b = torch.randn(2, 4, 3, generator=gen, dtype=torch.float64)
    lip = scale.flatten() * torch.linalg.eigvalsh(A)[-1] * torch.linalg.eigvalsh(C)[-1]
    g0 = torch.randn(2, 4, 3, generator=gen, dtype=torch.float64)
    eager = fista(hessian, b, 0.3, lip, g0=g0, max_iter=300, tol=1e-12)
    fused = fista(hessian, b, 0.3, lip, g0=g0, max_iter=300, tol=1e-12, fused=True)
    assert fused.codes.shape == (2, 4, 3)
    torch.testing.assert_close(fused.objective, eager.objective, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(fused.codes, eager.codes, rtol=0, atol=1e-6)


def test_fused_loop_refuses_what_it_does_not_do():
    from hebbnets.vn.fista import fista

    G, b = torch.eye(3), torch.ones(2, 3)
    with pytest.raises(ValueError, match="fused"):
        fista(lambda v: v @ G, b, 0.1, 1.0, fused=True, topk=1)
    with pytest.raises(ValueError, match="fused"):
        fista(lambda v: v @ G, b, 0.1, 1.0, fused=True, record_history=True)
    with pytest.raises(ValueError, match="fused"):
        fista(lambda v: v @ G, b, 0.1, 1.0, fused="yes")


# -- fused="auto": the models' choice of loop ------------------------------------------------------
def test_auto_fuses_only_where_it_applies_and_pays(monkeypatch):
    F = importlib.import_module("hebbnets.vn.fista")  # the module (hebbnets.vn.fista is also a function)

    big = torch.zeros(F.FUSED_MIN_ENTRIES // 8, 8)
    small = torch.zeros(2, 8)
    assert F.resolve_fused(True, small) and not F.resolve_fused(False, big)  # explicit choices are kept
    with torch.no_grad():
        assert F.resolve_fused("auto", big) == F.fused_available("cpu")
        assert not F.resolve_fused("auto", small)  # too small to pay for a compile
        assert not F.resolve_fused("auto", big, topk=2)  # the fused loop has no top-k step
        assert not F.resolve_fused("auto", big, record_history=True)
        monkeypatch.setitem(F._FUSED_WORKS, "cpu", False)  # kernels that do not compile here
        assert not F.resolve_fused("auto", big)
    monkeypatch.setitem(F._FUSED_WORKS, "cpu", True)
    assert not F.resolve_fused("auto", big)  # an autograd graph is being recorded: eager
    with pytest.raises(ValueError, match="^fused:"):
        F.resolve_fused("yes", big)


def test_fused_available_warns_once_and_falls_back_when_kernels_do_not_compile(monkeypatch):
    F = importlib.import_module("hebbnets.vn.fista")  # the module (hebbnets.vn.fista is also a function)

    def broken(*args, **kwargs):
        raise RuntimeError("no C++ compiler\nmore")

    monkeypatch.setattr(F, "_fista_fused", broken)
    monkeypatch.setattr(F, "_FUSED_WORKS", {})
    with pytest.warns(RuntimeWarning, match="fused FISTA unavailable on cpu .RuntimeError: no C.. compiler"):
        assert not F.fused_available("cpu")
    assert F._FUSED_WORKS == {"cpu": False}
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # cached: no second warning
        assert not F.fused_available("cpu")


def test_masked_lasso_auto_runs_the_fused_loop_to_the_eager_loops_objective():
    from hebbnets.vn.fista import FUSED_MIN_ENTRIES, LassoTerm, fused_available, lasso_optimality_residual, masked_lasso

    if not fused_available("cpu"):
        pytest.skip("torch.compile does not run on this machine (the eager loop is then used and tested)")
    gen = torch.Generator().manual_seed(7)
    K, n = 64, 48
    B = FUSED_MIN_ENTRIES // K
    S = torch.randn(n, K, generator=gen, dtype=torch.float64)
    S = S / S.norm(dim=0)
    x = torch.randn(B, n, generator=gen, dtype=torch.float64)
    terms = [LassoTerm(1.0, S, x)]
    with torch.no_grad():
        auto = masked_lasso(terms, 0.2, max_iter=2000, tol=1e-9)
        eager = masked_lasso(terms, 0.2, max_iter=2000, tol=1e-9, fused=False)
    assert auto.fused and not eager.fused and auto.form == eager.form == "gram"
    torch.testing.assert_close(auto.objective, eager.objective, rtol=1e-9, atol=1e-10)
    assert float(lasso_optimality_residual(S.T @ S, x @ S, auto.codes, 0.2).max()) < 1e-6
    with torch.no_grad():
        warm = masked_lasso(terms, 0.2, g0=auto.codes, max_iter=2000, tol=1e-9)  # sparse warm start: working set
    assert warm.form == "working_set" or int((auto.codes != 0).sum(1).max()) * 8 > K
    torch.testing.assert_close(warm.objective, eager.objective, rtol=1e-8, atol=1e-9)


# -- rows that retire at their own convergence (hessian_rows / retire_rows) -------------------------
def test_retired_rows_run_exactly_the_iterations_of_a_solve_of_that_sample_alone():
    """The slow reference: each sample solved alone. A retired row stops at the first test its own
    residual passes, so its iteration count and code are those of the one-sample solve (float64,
    a tolerance far above rounding: the trajectories cannot part), and the batch costs fewer
    row-iterations than iterating every row until the slowest converges."""
    S, x = _problem(n=16, k=32, b=24, seed=11)
    G, b, lam = S.T @ S, x @ S, 0.05
    lip = largest_eigenvalue(G)
    kw = dict(max_iter=3000, tol=1e-5)
    res = fista_gram(G, b, lam, lip, retire_rows=True, **kw)
    assert res.converged and res.row_iterations.dtype == torch.long and res.row_iterations.shape == (24,)
    assert int(res.row_iterations.max()) == res.iterations
    for i in range(24):
        alone = fista_gram(G, b[i:i + 1], lam, lip, **kw)
        assert alone.iterations == int(res.row_iterations[i])
        torch.testing.assert_close(res.codes[i:i + 1], alone.codes, rtol=0, atol=1e-10)
        torch.testing.assert_close(res.objective[i:i + 1], alone.objective, rtol=1e-12, atol=0)
    whole = fista_gram(G, b, lam, lip, **kw)
    assert whole.row_iterations is None and whole.iterations >= res.iterations
    assert int(res.row_iterations.sum()) < 24 * whole.iterations
    assert len(set(res.row_iterations.tolist())) > 1  # the rows did retire at different iterations


@pytest.mark.parametrize("monotone", [True, False])
def test_retiring_rows_solves_the_same_problem_with_per_sample_operators(monotone):
    """Per-sample Gram matrices and per-sample Lipschitz constants (the rows' operators and steps
    shrink with the batch): at a tight tolerance the objective and the KKT residual match the
    whole-batch solve; the returned objective is the codes' own."""
    S, x = _problem(n=16, k=20, b=10, seed=12)
    gen = torch.Generator().manual_seed(13)
    mask = (torch.rand(x.shape, generator=gen) > 0.3).double()
    G = torch.einsum("nk,bn,nj->bkj", S, mask, S)  # (B, K, K)
    b = (x * mask) @ S
    kw = dict(max_iter=20000, tol=1e-10, monotone=monotone)
    whole = fista_gram(G, b, 0.05, **kw)
    res = fista_gram(G, b, 0.05, retire_rows=True, **kw)
    assert res.converged
    torch.testing.assert_close(res.objective, whole.objective, rtol=1e-9, atol=0)
    assert float(lasso_optimality_residual(G, b, res.codes, 0.05).max()) < 1e-6
    own = 0.5 * (res.codes * torch.bmm(G, res.codes.unsqueeze(-1)).squeeze(-1)).sum(-1) - (b * res.codes).sum(-1) \
        + 0.05 * res.codes.abs().sum(-1)
    torch.testing.assert_close(res.objective, own, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("form", ["gram", "per_sample", "factor", "working_set"])
def test_masked_lasso_retiring_rows_reaches_the_whole_batch_objective_in_every_form(form):
    S, x = _problem(n=20, k=30, b=12, seed=14)
    gen = torch.Generator().manual_seed(15)
    mask = None if form == "working_set" else (torch.rand(x.shape, generator=gen) > 0.3).double()
    terms = [LassoTerm(1.0, S, x, mask)]
    kw = dict(max_iter=20000, tol=1e-10, form=form, fused=False)
    whole = masked_lasso(terms, 0.05, **kw)
    res = masked_lasso(terms, 0.05, retire_rows=True, **kw)
    assert res.form == form and res.converged and res.row_iterations.shape == (12,)
    assert int(res.row_iterations.min()) >= 1
    torch.testing.assert_close(res.objective, whole.objective, rtol=1e-8, atol=0)
    G = terms[0].gram()
    bound = 1e-2 * 0.05 if form == "working_set" else 1e-5  # outside its set, the working set stops at kkt_tol
    assert float(lasso_optimality_residual(G, terms[0].linear(), res.codes, 0.05).max()) < bound


def test_retiring_rows_at_the_iteration_budget_and_with_top_k_and_a_warm_start():
    S, x = _problem(n=16, k=32, b=8, seed=16)
    G, b = S.T @ S, x @ S
    short = fista_gram(G, b, 0.05, max_iter=7, tol=1e-12, retire_rows=True)
    assert not short.converged and short.iterations == 7 and bool((short.row_iterations == 7).all())
    torch.testing.assert_close(short.codes, fista_gram(G, b, 0.05, max_iter=7, tol=1e-12).codes, rtol=0, atol=1e-12)
    g0 = fista_gram(G, b, 0.05, max_iter=50).codes
    top = fista_gram(G, b, 0.05, g0=g0, topk=2, max_iter=500, tol=1e-6, retire_rows=True)
    assert int((top.codes != 0).sum(1).max()) <= 2
    assert bool((top.objective <= fista_gram(G, b, 0.05, g0=g0, topk=2, max_iter=0).objective + 1e-12).all())


def test_retiring_rows_in_the_fused_loop_matches_the_eager_loop():
    from hebbnets.vn.fista import fused_available

    if not fused_available("cpu"):
        pytest.skip("the fused kernels do not compile here")
    S, x = _problem(n=16, k=32, b=24, seed=11)
    G, b = S.T @ S, x @ S
    kw = dict(max_iter=3000, tol=1e-5, retire_rows=True)
    eager, fused = fista_gram(G, b, 0.05, **kw), fista_gram(G, b, 0.05, fused=True, **kw)
    assert fused.fused and fused.converged
    assert int((fused.row_iterations - eager.row_iterations).abs().max()) <= 3
    torch.testing.assert_close(fused.objective, eager.objective, rtol=1e-8, atol=0)


def test_hessian_rows_refuses_a_history_and_a_non_callable():
    G, b = torch.eye(3), torch.ones(2, 3)
    with pytest.raises(ValueError, match="^hessian_rows:"):
        fista(lambda v: v @ G, b, 0.1, 1.0, hessian_rows=lambda rows: (lambda v: v @ G), record_history=True)
    with pytest.raises(ValueError, match="^hessian_rows:"):
        fista(lambda v: v @ G, b, 0.1, 1.0, hessian_rows=G)
