"""VectorNetwork: energies, Danskin, exact zeros, constraints, determinism, checkpoints."""
import importlib

import pytest
import torch

import hebbnets as hn
from hebbnets.vn import VectorNetwork


def _data(n=96, d_in=12, d_out=8, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=gen, dtype=dtype)
    y = torch.randn(n, d_out, generator=gen, dtype=dtype)
    return x, y


def _net(x, y, **cfg):
    """A network built for the shapes of (x, y) with untrained (random) atoms."""
    cfg = {"progress": False, "dtype": "float64", "reseed_after": 0, "init": "random", "epochs": 1, **cfg}
    model = hn.models.make("vn", seed=0, **cfg)
    model.fit(hn.Split(x[:4], y[:4]))  # builds shapes; one tiny batch of learning
    return model


def test_free_energy_non_increasing_over_sweeps():
    x, y = _data()
    net = _net(x, y, atoms=(16, 12, 10), hidden=(10, 9), lam=0.05, beta=0.5, max_iter=50, max_sweeps=8, tol=1e-9)
    inf = net.infer(x, y)
    h = torch.tensor(inf.energy_history, dtype=torch.float64)
    assert len(h) >= 3
    assert bool((h[1:] <= h[:-1] + 1e-10 * h[0].abs()).all()), h
    # the energy reported at the end is the free energy of the returned codes
    torch.testing.assert_close(inf.total_energy.mean(), h[-1], rtol=1e-12, atol=1e-12)


def test_local_energy_is_the_part_of_F_that_depends_on_the_layer():
    x, y = _data(seed=1)
    net = _net(x, y, atoms=(16, 10), hidden=(9,), lam=0.05, beta=0.7, max_iter=30, max_sweeps=3)
    inf = net.infer(x, y)
    # perturb layer 0's code: the change of F equals the change of E_0
    g0 = inf.codes[0].clone()
    inf.codes[0] = g0 + 0.1
    F1, E1 = net.energy(inf), net._local_energy(0, inf.lams[0], x, net.layers[1].reconstruct(inf.codes[1]), None, None, inf.codes[0])
    inf.codes[0] = g0
    F0, E0 = net.energy(inf), net._local_energy(0, inf.lams[0], x, net.layers[1].reconstruct(inf.codes[1]), None, None, g0)
    torch.testing.assert_close(F1 - F0, E1 - E0)


@pytest.mark.parametrize("layers", [1, 3])
def test_atomic_hebb_is_minus_rho_times_autograd_gradient(layers):
    """Danskin: at converged codes, the local update equals -rho dF/d(S, U) with codes fixed."""
    x, y = _data(n=32, seed=2)
    x_mask = (torch.rand(x.shape, generator=torch.Generator().manual_seed(1)) > 0.2).double()
    y_mask = (torch.rand(y.shape, generator=torch.Generator().manual_seed(2)) > 0.2).double()
    atoms, hidden = ((20,), ()) if layers == 1 else ((20, 14, 10), (11, 7))
    net = _net(x, y, atoms=atoms, hidden=hidden, lam=0.1, beta=0.3, rho_s=0.3, rho_u=0.2,
               norm_policy="none", max_iter=2000, max_sweeps=400, tol=1e-6)
    inf = net.infer(x, y, x_mask, y_mask)
    # near a fixed point of the sweeps (each layer's KKT residual, 0.1 % of lam): the identity
    # below holds at any codes, but it is the gradient of min_g F only at a minimiser
    assert all(float(r.max()) < 1e-4 for r in net.optimality_residual(inf))
    params = [p for layer in net.layers for p in (layer.S, layer.U)]
    for p in params:
        p.requires_grad_(True)
    net.energy(inf).mean().backward()
    grads = [p.grad.clone() for p in params]
    for p in params:
        p.requires_grad_(False)
        p.grad = None
    updates = net.atomic_hebb(inf)
    for l, upd in enumerate(updates):
        torch.testing.assert_close(upd["S"], -0.3 * grads[2 * l], atol=1e-10, rtol=1e-5)
        torch.testing.assert_close(upd["U"], -0.2 * grads[2 * l + 1], atol=1e-10, rtol=1e-5)
        assert float(upd["S"].abs().max()) > 0 and float(upd["U"].abs().max()) > 0


@pytest.mark.parametrize("policy", ["unit_s", "clip_s", "none"])
def test_inactive_atoms_are_bit_for_bit_unchanged(policy):
    x, y = _data(n=32, seed=3, dtype=torch.float32)
    net = _net(x, y, atoms=(64,), lam=2.5, norm_policy=policy, dtype="float32")
    inf = net.infer(x, y)
    g = inf.codes[0]
    inactive = ~(g != 0).any(dim=0)
    assert 0 < int(inactive.sum()) < 64
    S0, U0 = net.layers[0].S.clone(), net.layers[0].U.clone()
    net.atomic_hebb(inf)
    S1, U1 = net.layers[0].S, net.layers[0].U
    assert torch.equal(S1[:, inactive], S0[:, inactive]) and torch.equal(U1[:, inactive], U0[:, inactive])
    assert not torch.equal(S1[:, ~inactive], S0[:, ~inactive])


def test_norm_policy_bounds_updated_atoms():
    x, y = _data(n=64, seed=4)
    net = _net(x, y, atoms=(16,), lam=0.01, norm_policy="unit_s", rho_s=5.0)
    inf = net.infer(x, y)
    net.atomic_hebb(inf)
    active = (inf.codes[0] != 0).any(0)
    torch.testing.assert_close(net.layers[0].S[:, active].norm(dim=0), torch.ones(int(active.sum()), dtype=torch.float64))


def test_topk_and_nonneg_constraints():
    x, y = _data(seed=5)
    net = _net(x, y, atoms=(24, 16), hidden=(10,), lam=0.01, topk=3, nonneg=True, max_sweeps=3)
    for inf in (net.infer(x, y), net.infer(x)):
        assert int((inf.codes[-1] != 0).sum(-1).max()) <= 3
        assert all(bool((g >= 0).all()) for g in inf.codes)
    assert int((inf.codes[0] != 0).sum(-1).max()) > 3  # top-k applies to the top layer only


def test_masked_input_entries_do_not_influence_codes():
    x, y = _data(seed=6)
    mask = torch.ones_like(x)
    mask[:, :4] = 0
    net = _net(x, y, atoms=(20,), lam=0.05)
    a = net.infer(x, x_mask=mask)
    x2 = x.clone()
    x2[:, :4] = 100.0
    b = net.infer(x2, x_mask=mask)
    assert torch.equal(a.codes[0], b.codes[0])


def test_reseeds_atoms_unused_for_configured_batches():
    x, y = _data(n=32, seed=7)
    net = _net(x, y, atoms=(10,), lam=0.05, reseed_after=2)
    net.layers[0].S[:, 3] = 0.0  # a dead atom: its code is always exactly zero
    net.layers[0].U[:, 3] = 0.0
    for _ in range(2):
        net.atomic_hebb(net.infer(x, y))
    assert float(net.layers[0].S[:, 3].norm()) == pytest.approx(1.0)
    assert int(net.layers[0].unused_batches[3]) == 0


def test_effective_weight_is_sum_of_rank1_atoms():
    x, y = _data(seed=8)
    net = _net(x, y, atoms=(6,))
    layer = net.layers[0]
    g = torch.randn(6, dtype=torch.float64)
    expected = sum(g[i] * torch.outer(layer.U[:, i], layer.S[:, i]) for i in range(6))
    torch.testing.assert_close(layer.effective_weight(g), expected)
    torch.testing.assert_close(layer.effective_weight(g[None])[0], expected)
    torch.testing.assert_close(layer.message(g[None])[0], layer.U @ g)


def _toy():
    return hn.tasks.make("toy_atoms", seed=0, n_train=200, n_test=50, n_atoms=10, x_dim=8, y_dim=6)


def test_same_seed_same_everything_and_save_load(tmp_path):
    task = _toy()
    a = hn.models.make("vn", seed=3, atoms=(12,), epochs=2, progress=False).fit(task.train)
    b = hn.models.make("vn", seed=3, atoms=(12,), epochs=2, progress=False).fit(task.train)
    c = hn.models.make("vn", seed=4, atoms=(12,), epochs=2, progress=False).fit(task.train)
    assert torch.equal(a.layers[0].S, b.layers[0].S) and torch.equal(a.layers[0].U, b.layers[0].U)
    assert not torch.equal(a.layers[0].S, c.layers[0].S)
    x = task.tests["ood"].x
    assert torch.equal(a.infer(x).codes[0], b.infer(x).codes[0])
    assert torch.equal(a.predict(x), b.predict(x))
    a.save(tmp_path / "vn")
    loaded = hn.models.load(tmp_path / "vn")
    assert isinstance(loaded, VectorNetwork)
    assert torch.equal(loaded.predict(x), a.predict(x))
    assert loaded.num_parameters == a.num_parameters == 12 * (8 + 6)
    assert not list((tmp_path / "vn").glob("*.pt")) and not list((tmp_path / "vn").glob("*.pkl"))


def test_learning_reduces_error_on_toy_task():
    task = hn.tasks.make("toy_atoms", seed=0, n_train=600, n_test=100, n_atoms=12, x_dim=10, y_dim=8)
    cfg = dict(atoms=(16,), lam=0.05, nonneg=True, rho_s=1.0, rho_u=1.0, batch_size=64, progress=False, tol=1e-3)
    untrained = hn.models.make("vn", seed=0, epochs=1, rho_s=0.0, rho_u=0.0, **{k: v for k, v in cfg.items() if k not in ("rho_s", "rho_u")})
    untrained.fit(task.train)
    trained = hn.models.make("vn", seed=0, epochs=15, **cfg).fit(task.train)
    assert trained.score(task.tests["id"]) < 0.5 * untrained.score(task.tests["id"])


def test_reconstruction_output_mode():
    task = _toy()
    split = hn.Split(task.train.x, task.train.x)
    m = hn.models.make("vn", atoms=(12,), epochs=1, output="reconstruction", progress=False).fit(split)
    assert m.predict(split.x).shape == split.x.shape
    with pytest.raises(ValueError, match="output"):
        hn.models.make("vn", atoms=(12,), epochs=1, output="reconstruction", progress=False).fit(task.train)


def test_test_lam_is_the_l1_weight_at_prediction_only():
    x, y = _data(n=64, seed=3)
    net = _net(x, y, atoms=(24,), lam=0.05, max_iter=300)
    same = _net(x, y, atoms=(24,), lam=0.05, max_iter=300, test_lam=0.05)
    torch.testing.assert_close(net.predict(x), same.predict(x), rtol=0, atol=0)  # None means lam
    counts = net.active_count(x)
    torch.testing.assert_close(counts, (net.infer(x).codes[0] != 0).sum(-1))
    # a test-time weight above every correlation |S^T x| zeroes every code: exact zeros out
    big = _net(x, y, atoms=(24,), lam=0.05, max_iter=300, test_lam=1e6)
    assert bool((big.predict(x) == 0).all()) and int(big.active_count(x).sum()) == 0
    # a smaller test-time weight keeps more atoms active; training's weight is back afterwards
    small = _net(x, y, atoms=(24,), lam=0.05, max_iter=300, test_lam=0.005)
    assert float(small.active_count(x).float().mean()) > float(counts.float().mean())
    # one rule for both phases: infer() defaults to training's weight, phase="predict" is test_lam
    assert small.config.lams_for("train") == (0.05,) and small.config.lams_for("predict") == (0.005,)
    torch.testing.assert_close(small.infer(x).codes[0], net.infer(x).codes[0], rtol=0, atol=0)
    assert small.infer(x).lams == (0.05,) and small.infer(x, phase="predict").lams == (0.005,)
    assert float(small.optimality_residual(small.infer(x, phase="predict"))[0].max()) < 1e-3
    with pytest.raises(ValueError, match="phase"):
        small.infer(x, phase="test")


@pytest.mark.parametrize(
    "cfg, word",
    [
        (dict(atoms=()), "atoms"),
        (dict(test_lam=-0.1), "test_lam"),
        (dict(test_lam=(0.1, 0.1)), "test_lam"),
        (dict(atoms=(4, 4)), "hidden"),
        (dict(lam=-1.0), "lam"),
        (dict(beta=(1.0, 2.0)), "beta"),
        (dict(topk=-1), "topk"),
        (dict(norm_policy="big"), "norm_policy"),
        (dict(output="logits"), "output"),
        (dict(max_iter=0), "max_iter"),
        (dict(tol=float("nan")), "tol"),
        (dict(atomz=(4,)), "atomz"),
    ],
)
def test_bad_config_raises_naming_the_argument(cfg, word):
    with pytest.raises(ValueError, match=word):
        hn.models.make("vn", **cfg)


def test_vn_rejects_class_labels():
    with pytest.raises(ValueError, match="split"):
        hn.models.make("vn", progress=False).fit(hn.Split(torch.randn(5, 3), torch.tensor([0, 1, 0, 1, 1])))


@pytest.mark.parametrize("form", ["per_sample", "factor"])
def test_product_forms_solve_the_same_masked_problem(form):
    """Samples sharing a mask pattern are solved with one shared Gram matrix ("gram"); the
    per-sample Gram form and the factor form (never forming a matrix) must solve the same
    problem: equal free energy and a near-zero KKT residual, measured by the un-expanded
    gradient (not by any path's products or stopping test). The codes themselves are not
    compared: with more atoms than observed entries the LASSO is ill-conditioned and two exact
    solvers agree in objective long before they agree in codes."""
    x, y = _data(n=64, seed=9)
    patterns = torch.tensor([[1.0] * 12, [1.0] * 6 + [0.0] * 6, [0.0] * 3 + [1.0] * 9])
    x_mask = patterns[torch.arange(64) % 3].double()  # 3 patterns for 64 samples: grouped
    y_mask = torch.ones_like(y)
    y_mask[::2, :3] = 0
    net = _net(x, y, atoms=(20,), lam=0.05, beta=0.5, max_iter=20000, tol=1e-9)
    net.product_form = "gram"
    grouped = net.infer(x, y, x_mask, y_mask)
    net.product_form = form
    other = net.infer(x, y, x_mask, y_mask)
    for inf in (grouped, other):
        # lam = 0.05: a residual of 1e-6 is 0.002 % of it (measured: 1e-8 at tol 1e-9)
        assert float(net.optimality_residual(inf)[0].max()) < 1e-6
    torch.testing.assert_close(grouped.total_energy, other.total_energy, rtol=1e-8, atol=0)


def _spy(monkeypatch, owner, name: str, field: str) -> list:
    """``field`` of the result of every call of ``owner.name`` from now on (the call itself unchanged)."""
    seen = []
    real = getattr(owner, name)

    def spy(*args, **kw):
        res = real(*args, **kw)
        seen.append(getattr(res, field))
        return res

    monkeypatch.setattr(owner, name, spy)
    return seen


def _spy_forms(monkeypatch) -> list[str]:
    """The product form of every ``masked_lasso`` solve the network runs from now on."""
    return _spy(monkeypatch, importlib.import_module("hebbnets.vn.network"), "masked_lasso", "form")


def test_masked_inference_picks_the_factor_form_for_many_atoms(monkeypatch):
    """Per-sample masks and more atoms than entries: the per-sample Gram form is never chosen
    (it would build B K^2 n numbers); without masks and few atoms the shared Gram form is."""
    used = _spy_forms(monkeypatch)
    x, y = _data(n=32, d_in=16, seed=4)
    net = _net(x, y, atoms=(96,), lam=0.05, max_iter=50)
    mask = (torch.rand(x.shape, generator=torch.Generator().manual_seed(1)) > 0.3).double()
    used.clear()
    net.infer(x, y, mask)
    assert used == ["factor"]
    few = _net(x, y, atoms=(8,), lam=0.05, max_iter=50)
    used.clear()
    few.infer(x, y)
    assert used == ["gram"]


def test_warm_started_epochs_reach_the_cold_start_energy_in_fewer_iterations():
    # warm_start: each sample's FISTA starts from its previous epoch's code (one layer: a convex solve)
    x, y = _data(n=128)
    cfg = dict(atoms=(16,), lam=0.05, beta=0.5, max_iter=500, tol=1e-10, epochs=4, batch_size=32, val_fraction=0.0,
               progress=False, dtype="float64", reseed_after=0, init="random")
    split = hn.Split(x, y)
    cold = hn.models.make("vn", seed=0, **cfg).fit(split)
    warm = hn.models.make("vn", seed=0, warm_start=True, **cfg).fit(split)
    assert warm.fit_iterations < cold.fit_iterations
    # the same problem from a cold and a warm start: the same energy within the solver's tolerance
    start = [warm.infer(x, y).codes[0] * 0.9]
    e_cold = warm.infer(x, y).total_energy
    e_warm = warm.infer(x, y, init=start).total_energy
    torch.testing.assert_close(e_warm, e_cold, rtol=1e-7, atol=1e-9)
    # and the trained models agree to the solver's tolerance on what they predict
    torch.testing.assert_close(warm.predict(x), cold.predict(x), rtol=1e-4, atol=1e-5)


def test_warm_start_off_is_the_old_computation():
    x, y = _data(n=64)
    cfg = dict(atoms=(8,), epochs=2, batch_size=32, progress=False, dtype="float64", init="random")
    a = hn.models.make("vn", seed=0, **cfg).fit(hn.Split(x, y))
    b = hn.models.make("vn", seed=0, warm_start=False, **cfg).fit(hn.Split(x, y))
    assert torch.equal(a.predict(x), b.predict(x))
    assert "warm_start" not in hn.experiments.canonical_config("vn", dict(b.config.__dict__))  # old record keys hold


def test_retiring_rows_reaches_the_whole_batch_energy_and_off_is_the_old_computation():
    """``retire_rows``: each sample's solve stops at its own convergence. At a tight tolerance the
    energies and the trained models match the whole-batch solves; off (the default) computes
    what fits did before the field existed, so old record keys hold."""
    x, y = _data(n=96)
    mask = (torch.rand(x.shape, generator=torch.Generator().manual_seed(5)) > 0.3).double()
    cfg = dict(atoms=(12,), lam=0.05, beta=0.5, max_iter=3000, tol=1e-10, epochs=2, batch_size=32, val_fraction=0.0,
               progress=False, dtype="float64", reseed_after=0, init="random")
    split = hn.Split(x, y, mask)
    whole = hn.models.make("vn", seed=0, **cfg).fit(split)
    retire = hn.models.make("vn", seed=0, retire_rows=True, **cfg).fit(split)
    torch.testing.assert_close(retire.infer(x, y, mask).total_energy, whole.infer(x, y, mask).total_energy,
                               rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(retire.predict(x), whole.predict(x), rtol=1e-5, atol=1e-7)
    off = hn.models.make("vn", seed=0, retire_rows=False, **cfg)
    assert "retire_rows" not in hn.experiments.canonical_config("vn", dict(off.config.__dict__))
    with pytest.raises(ValueError, match="^retire_rows:"):
        hn.models.make("vn", retire_rows=1)


def test_precisions_name_a_bad_layer_index():
    x, y = _data()
    net = _net(x, y, atoms=(6, 4), hidden=(5,), beta=0.7, max_iter=5, max_sweeps=1)
    assert net.precisions(0) == (1.0, 0.7) and net.precisions(1) == (0.7, 0.7)
    for bad in (2, -1, 1.0, True):
        with pytest.raises(ValueError, match="l:"):
            net.precisions(bad)


def test_fused_attribute_selects_the_loop_and_both_reach_the_same_energy(monkeypatch):
    """``fused`` is an attribute like ``product_form``: ``"auto"`` (the default) runs the compiled
    fused loop on a batch large enough to pay for it, ``False`` the eager loop; both solve the
    same problem (equal energy, near-zero KKT residual)."""
    F = importlib.import_module("hebbnets.vn.fista")  # the module (hebbnets.vn.fista is also a function)

    if not F.fused_available("cpu"):
        pytest.skip("torch.compile does not run on this machine (the eager loop is then used and tested)")
    K = 64
    x, y = _data(n=F.FUSED_MIN_ENTRIES // K, seed=5)
    net = _net(x, y, atoms=(K,), lam=0.05, beta=0.5, max_iter=3000, tol=1e-9)
    assert net.fused == "auto"
    seen = _spy(monkeypatch, F, "fista", "fused")
    auto = net.infer(x, y)
    net.fused = False
    eager = net.infer(x, y)
    assert seen == [True, False]
    # lam = 0.05: a residual below 1e-4 is 0.2 % of it (measured 6.5e-6 for both loops at tol 1e-9)
    assert max(float(net.optimality_residual(inf)[0].max()) for inf in (auto, eager)) < 1e-4
    torch.testing.assert_close(auto.total_energy, eager.total_energy, rtol=1e-9, atol=0)


def test_the_speed_measures_loop_switch_sets_every_solver_and_restores_it():
    from hebbnets.measures.speed import _fista_loop
    from hebbnets.vn import AppliedAtomStack, MatrixAtomLayer, PairAtomLayer, PrivatePairLayer

    owners = (VectorNetwork, MatrixAtomLayer, PrivatePairLayer, PairAtomLayer, AppliedAtomStack)
    with _fista_loop(False):
        assert all(cls.fused is False for cls in owners)
    assert all(cls.fused == "auto" for cls in owners)
    # inherited attributes stay inherited (the matrix layers read their base class's)
    assert "fused" not in MatrixAtomLayer.__dict__ and "fused" not in PrivatePairLayer.__dict__
    with pytest.raises(RuntimeError), _fista_loop(True):
        raise RuntimeError("a fit that fails inside the block")
    assert all(cls.fused == "auto" for cls in owners)


def test_the_warm_start_measure_runs_every_fit_at_the_tolerance_it_is_given():
    """``vn_warm_start(tol=...)``: every run's FISTA tolerance replaced (the row records it and the
    chosen one); a tighter tolerance costs the cold fit more iterations; bad values fail before a fit."""
    from hebbnets.measures.speed import vn_warm_start

    params = {"n_train": 24, "n_test": 6}
    [loose] = vn_warm_start("toy_atoms", params)
    [tight] = vn_warm_start("toy_atoms", params, tol=1e-5)
    assert "tol" not in loose and tight["tol"] == 1e-5 and tight["chosen_tol"] == 1e-3  # toy_atoms' chosen vn
    assert tight["cold_iterations"] > loose["cold_iterations"]
    for bad in (0, 1.5, True, "1e-4"):
        with pytest.raises(ValueError, match="^tol: "):
            vn_warm_start("toy_atoms", params, tol=bad)


def test_the_warm_start_measure_adds_a_retire_run_on_request():
    """``vn_warm_start(retire=True)``: cold, warm and retire runs (no fused run), the retire ratios
    computed from them; the retire fit reaches the cold fit's validation error closely; bad values
    fail before a fit."""
    from hebbnets.measures.speed import vn_warm_start

    params = {"n_train": 24, "n_test": 6}
    [row] = vn_warm_start("toy_atoms", params, fast=True, retire=True)
    assert {"cold_seconds", "warm_seconds", "retire_seconds"} <= set(row) and "fused_seconds" not in row
    assert row["retire_seconds_ratio"] == pytest.approx(row["cold_seconds"] / row["retire_seconds"])
    assert row["retire_iterations_ratio"] == pytest.approx(row["cold_iterations"] / row["retire_iterations"])
    assert row["retire_best_val"] == pytest.approx(row["cold_best_val"], rel=0.2)
    for bad in ({"retire": 1, "fast": True}, {"retire": True, "fast": False}):
        with pytest.raises(ValueError, match="^retire: "):
            vn_warm_start("toy_atoms", params, **bad)


def test_active_estimate_routes_sparse_solves_from_zeros_to_the_working_set(monkeypatch):
    """Every inference records each layer's largest active count; the next solve from zeros of a
    layer whose codes were sparse (at most K / 8 atoms) runs the working-set solver, to the same
    energy and KKT residual as the dense form; ``product_form`` still overrides it."""
    F = importlib.import_module("hebbnets.vn.fista")
    K = 128
    x, y = _data(n=64, d_in=24, seed=7)
    net = _net(x, y, atoms=(K,), lam=1.5, beta=0.5, max_iter=5000, tol=1e-10)  # 3-15 atoms of 128 per sample
    net.active_estimate = None
    seen = _spy_forms(monkeypatch)
    first = net.infer(x, y)  # nothing known yet: the cheapest dense form
    assert net.active_estimate == [int((first.codes[0] != 0).sum(1).max())]
    assert 0 < net.active_estimate[0] * F.WORKING_SET_SPARSITY <= K  # the codes are sparse here
    second = net.infer(x, y)
    net.product_form = "gram"
    forced = net.infer(x, y)
    assert seen[0] != "working_set" and seen[1] == "working_set" and seen[2] == "gram"
    assert float(net.optimality_residual(second)[0].max()) < 1e-6
    torch.testing.assert_close(second.total_energy, first.total_energy, rtol=1e-9, atol=0)
    torch.testing.assert_close(forced.total_energy, first.total_energy, rtol=1e-9, atol=0)
