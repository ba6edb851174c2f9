"""Amortised inference: LISTA is ISTA at its dictionary initialisation, learns the codes of a trained
VN, gives exact zeros, warm-starts FISTA, and round-trips through checkpoints."""
import pytest
import torch

import hebbnets as hn
from hebbnets.vn import AmortisedVN, LISTA, ista_reference, soft_threshold
from hebbnets.vn.amortised import measure


@pytest.fixture(scope="module")
def toy():
    task = hn.tasks.make("toy_atoms", seed=0, n_atoms=12, x_dim=10, y_dim=10, n_train=400, n_test=120)
    vn = hn.models.make("vn", seed=0, atoms=(20,), lam=0.03, epochs=3, batch_size=64, val_fraction=0.0,
                        progress=False).fit(task.train)
    amortised = AmortisedVN.fit(vn, task.train, steps=3, epochs=60, lr=3e-3, patience=60, progress=False)
    return task, vn, amortised


def _lasso_objective(vn, x, codes):
    return float(vn.free_energy(vn.flatten(x), None, None, None, [codes.to(vn.dtype)], vn.config.lams_for("train")).mean())


@pytest.mark.parametrize("nonneg", [False, True])
def test_lista_at_its_dictionary_initialisation_is_ista(nonneg):
    g = torch.Generator().manual_seed(0)
    S, x = torch.randn(12, 20, generator=g, dtype=torch.float64), torch.randn(7, 12, generator=g, dtype=torch.float64)
    lip = float(torch.linalg.eigvalsh(S.T @ S).max())
    for steps in (1, 4):
        enc = LISTA.from_dictionary(S, lam=0.5, lip=lip, steps=steps, nonneg=nonneg, progress=False)
        ref = ista_reference(S, x, lam=0.5, n_iter=steps, nonneg=nonneg)
        torch.testing.assert_close(enc.predict(x.float()), ref.float(), rtol=1e-4, atol=1e-5)


def test_encoder_learns_the_codes_on_held_out_inputs(toy):
    task, vn, amortised = toy
    held_out = task.tests["id"]
    target = vn.infer(vn.flatten(held_out.x)).codes[0].float()
    init = LISTA.from_dictionary(vn.layers[0].S, vn.config.lam, steps=3, progress=False)
    err_init = float(((init.predict(held_out.x) - target) ** 2).mean())
    err = float(((amortised.encode(held_out.x)[0].float() - target) ** 2).mean())
    assert err < 0.5 * err_init, (err, err_init)
    # and its prediction is close to the iterative one
    assert amortised.predict(held_out.x).shape == held_out.y.shape
    assert float(((amortised.predict(held_out.x) - held_out.y) ** 2).mean()) < 3 * vn.score(held_out) + 1e-3


def test_lasso_objective_lowers_the_energy_without_targets(toy):
    task, vn, _ = toy
    held_out = task.tests["id"].x
    lasso = AmortisedVN.fit(vn, task.train, steps=3, objective="lasso", epochs=30, lr=3e-3, progress=False)
    assert lasso.encoders[0].config.restore == "last"
    init = LISTA.from_dictionary(vn.layers[0].S, vn.config.lam, steps=3, progress=False)
    e_init = _lasso_objective(vn, held_out, init.predict(held_out))
    e = _lasso_objective(vn, held_out, lasso.encode(held_out)[0])
    e_fista = float(vn.infer(vn.flatten(held_out)).total_energy.mean())
    assert e_fista <= e < e_init and (e - e_fista) < 0.5 * (e_init - e_fista), (e_fista, e, e_init)
    with pytest.raises(ValueError, match="^objective:"):  # a fresh fit has no dictionary to amortise
        hn.models.make("lista", objective="lasso", progress=False).fit(task.train)


def test_codes_have_exact_zeros_from_the_threshold(toy):
    task, vn, amortised = toy
    enc = amortised.encoders[0]
    x = task.tests["id"].x
    codes = enc.predict(x)
    assert int((codes == 0).sum()) > 0.3 * codes.numel()  # sparse, with exact zeros
    # the last step's pre-threshold value of every zero lies within its threshold
    with torch.no_grad():
        b = enc.encode_in(x)
        z = soft_threshold(b, enc.theta.clamp_min(0))
        for _ in range(enc.config.steps - 2):
            z = soft_threshold(b + z @ enc.recurrent.T, enc.theta.clamp_min(0))
        pre = b + z @ enc.recurrent.T
    zero = codes == 0
    assert bool((pre.abs()[zero] <= enc.theta.clamp_min(0).expand_as(pre)[zero] + 1e-6).all())


def test_warm_start_reaches_the_same_optimum_in_fewer_iterations(toy):
    task, vn, amortised = toy
    x = task.tests["id"].x
    cold = vn.infer(vn.flatten(x))
    warm = amortised.infer(x)
    assert cold.converged and warm.converged
    assert warm.iterations < cold.iterations, (warm.iterations, cold.iterations)
    torch.testing.assert_close(warm.total_energy.mean(), cold.total_energy.mean(), rtol=1e-3, atol=0)
    lam = vn.config.lam
    assert float(vn.optimality_residual(warm)[0].max()) < 0.05 * lam
    assert float(vn.optimality_residual(cold)[0].max()) < 0.05 * lam


def test_multilayer_masked_shapes_and_checkpoint(tmp_path):
    task = hn.tasks.make("functions1d", seed=0, mode="masked", length=12, n_train=96, n_test=24)
    vn = hn.models.make("vn", seed=0, atoms=(16, 8), hidden=(6,), epochs=1, max_iter=30, max_sweeps=2,
                        progress=False).fit(task.train)
    amortised = AmortisedVN.fit(vn, task.train, steps=2, epochs=2, progress=False)
    split = task.tests["id"]
    codes = amortised.encode(split.x, split.x_mask)
    assert [tuple(g.shape) for g in codes] == [(24, 16), (24, 8)]
    assert amortised.predict(split.x, split.x_mask).shape == split.y.shape
    # missing entries do not matter
    assert torch.equal(amortised.encode(split.x + 5 * (1 - split.x_mask), split.x_mask)[1], codes[1])
    amortised.save(tmp_path / "am")
    again = AmortisedVN.load(tmp_path / "am")
    assert all(torch.equal(a, b) for a, b in zip(again.encode(split.x, split.x_mask), codes))
    assert isinstance(hn.models.load(tmp_path / "am" / "encoder1"), LISTA)
    with pytest.raises(ValueError, match="^path:"):
        AmortisedVN.load(tmp_path / "nothing")


def test_measure_returns_one_record_per_method(toy):
    task, vn, amortised = toy
    fista, am, warm = measure(amortised, task.tests["id"], repeats=1)
    assert [r["method"] for r in (fista, am, warm)] == ["fista", "amortised", "warm_start"]
    assert am["iterations"] == 0 and warm["iterations"] < fista["iterations"]
    assert am["error_ratio"] == pytest.approx(am["error"] / fista["error"])
    budget = am["fista_budget_equal_energy"]
    assert budget is None or 1 <= budget <= vn.config.max_iter
    assert warm["energy"] == pytest.approx(fista["energy"], rel=1e-3)
    # warm started, fewer iterations than plain FISTA's full run reach its energy
    assert warm["budget_equal_energy"] is not None and warm["budget_equal_energy"] < fista["iterations"]


def test_bad_input_names_the_argument(toy):
    task, vn, amortised = toy
    with pytest.raises(ValueError, match="^encoders:"):
        AmortisedVN(vn, [])
    with pytest.raises(ValueError, match="^vn:"):
        AmortisedVN.fit(hn.models.make("vn"), task.train)
    with pytest.raises(ValueError, match="^init:"):
        vn.infer(vn.flatten(task.tests["id"].x), init=[torch.zeros(3, 20)])
    with pytest.raises(ValueError, match="^steps:"):
        hn.models.make("lista", steps=0)
    with pytest.raises(ValueError, match="^S:"):
        LISTA.from_dictionary(torch.zeros(3), lam=0.1)


def test_amortised_protocol_rows_per_split_and_plan_checks():
    from hebbnets.experiments import Bench, execute, plan_bench, variant

    params = dict(n_atoms=8, x_dim=8, y_dim=8, n_train=120, n_test=40)
    bench = Bench("a", "toy_atoms", (variant("vn", atoms=(12,), lam=0.03, epochs=2, progress=False),), params=params,
                  seeds=(0,), protocol="amortised", options={"steps": 2, "encoder": {"epochs": 3}, "repeats": 1})
    [entry] = execute(plan_bench(None, bench, "quick"), None)
    rows = {(r["split"], r["metric"]): r["value"] for r in entry["rows"]}
    task = hn.tasks.make("toy_atoms", seed=0, **params)
    for split in task.tests:
        assert rows[(split, "error_ratio")] == pytest.approx(rows[(split, "amortised_error")] / rows[(split, "fista_error")])
        # the VN's own score and measure's FISTA error are the same prediction
        assert rows[(split, task.metric)] == pytest.approx(rows[(split, "fista_error")], rel=1e-5)
        for key in ("energy", "error"):
            assert rows[(split, f"speedup_equal_{key}")] > 0 and rows[(split, f"beyond_budget_{key}")] in (0.0, 1.0)
            if rows[(split, f"beyond_budget_{key}")]:  # no FISTA budget as good: full-budget time, no budget
                assert rows[(split, f"fista_budget_equal_{key}")] is None
    assert entry["stats"]["encoder_seconds"] > 0
    with pytest.raises(ValueError, match="protocol 'amortised' needs a VectorNetwork"):
        plan_bench(None, bench.with_(models=(variant("mlp", epochs=1),)), "quick")
    with pytest.raises(ValueError, match="options: unknown"):
        plan_bench(None, bench.with_(options={"stepz": 2}), "quick")
    with pytest.raises(ValueError, match="steps"):
        plan_bench(None, bench.with_(options={"steps": 0}), "quick")
