import math

import pytest
import torch

import hebbnets as hn
from hebbnets.bench import tune, validation_split
from hebbnets.experiments import Bench, execute, get_protocol, plan_bench, register_protocol, variant
from hebbnets.experiments import _protocols

TINY = dict(grid=8, held_out=[3, 4], id_fraction=0.2)


def _run(bench, task=None):
    return execute(plan_bench(None, bench, "quick", task=task), None)


def test_a_registered_protocol_returns_rows_and_the_runner_records_them(monkeypatch):
    monkeypatch.setattr(_protocols.PROTOCOLS, "items", dict(_protocols.PROTOCOLS.items))

    @register_protocol("two_stage_test")
    def two_stage(ctx):
        half = len(ctx.task.train) // 2
        ctx.fit(ctx.task.train.subset(torch.arange(half)))
        rows = ctx.score_tests(prefix="stage1_")
        ctx.fit(ctx.task.train)
        ctx.stats["stages"] = 2
        return rows + ctx.score_tests(prefix="stage2_")

    [entry] = _run(Bench("b", "spatial2d", (variant("mlp", hidden=(8,), epochs=1),), params=TINY, seeds=(0,),
                         protocol="two_stage_test"))
    assert [(r["split"], r["metric"]) for r in entry["rows"]] == [
        ("id", "stage1_mse"), ("ood", "stage1_mse"), ("id", "stage2_mse"), ("ood", "stage2_mse")]
    assert entry["stats"]["stages"] == 2 and entry["protocol"] == "two_stage_test"
    assert entry["stats"]["fit_seconds"] > 0 and entry["stats"]["num_parameters"] > 0
    with pytest.raises(ValueError, match="already registered"):
        register_protocol("fit")(lambda ctx: [])

    @register_protocol("bad_rows_test")
    def bad_rows(ctx):
        return [{"split": "id"}]

    with pytest.raises(ValueError, match="protocol"):
        _run(Bench("b", "spatial2d", (variant("mlp", hidden=(8,), epochs=1),), params=TINY, seeds=(0,),
                   protocol="bad_rows_test"))


def test_fit_curve_scores_every_epoch_without_changing_the_fit():
    task = hn.tasks.make("rsgn_tree", seed=0, n_train=80, n_test=30)
    cfg = dict(epochs=3, d_model=8, n_heads=2, n_layers=1, d_ff=8, restore="last", val_fraction=0.0)
    plain = _run(Bench("b", "rsgn_tree", (variant("transformer", **cfg),), seeds=(0,)), task)[0]
    curved = _run(Bench("b", "rsgn_tree", (variant("transformer", **cfg),), seeds=(0,), options={"curve": True}), task)[0]
    curve = curved["stats"]["curve"]["id"]
    final = {(r["split"], r["metric"]): r["value"] for r in curved["rows"]}
    assert len(curve) == 3 and math.isclose(curve[-1], final[("id", "accuracy")])
    assert final[("id", "best_epoch_accuracy")] == max(curve)
    assert plain["rows"][0] == curved["rows"][0]  # observing the test curve never feeds back
    assert plain["key"] != curved["key"]  # options are part of the key
    with pytest.raises(ValueError, match="options"):
        _run(Bench("b", "rsgn_tree", (variant("transformer", **cfg),), seeds=(0,), options={"nope": 1}), task)


def test_tune_protocol_scores_only_data_carved_from_the_training_split():
    task = hn.tasks.make("spatial2d", seed=0, **TINY)
    train, val = validation_split(task, 0.25)
    assert len(train) + len(val) == len(task.train) and len(val) == round(0.25 * len(task.train))
    rows = torch.cat([train.x, val.x])
    assert torch.equal(rows.sort(0).values, task.train.x.sort(0).values)  # a partition of train, nothing else
    recs = tune(task, "mlp", {"lr": [1e-3, 1e-2]}, base={"hidden": (8,), "epochs": 2})
    assert len(recs) == 2 and recs[0]["value"] <= recs[1]["value"]
    train, val = validation_split(task, 0.2)  # tune's default part
    model = hn.models.make("mlp", seed=0, **recs[0]["full_config"]).fit(train)
    assert math.isclose(model.score(val), recs[0]["value"], rel_tol=1e-5)
    with pytest.raises(ValueError, match="val_fraction"):
        validation_split(task, 1.5)


def test_a_tune_point_records_its_epochs_so_a_search_that_hit_its_cap_is_on_record():
    """The ``tune`` protocol keeps the ``history`` statistic as ``fit`` does: epochs run and the best
    validation epoch, so a validation point the epoch cap ended (not patience) can be told apart."""
    base = dict(hidden=(8,), batch_size=16, val_fraction=0.25)
    capped, stopped = (_run(Bench("b", "spatial2d", (variant("mlp", **base, **cfg),), params=TINY, seeds=(0,),
                                  protocol="tune"))[0]
                       for cfg in (dict(epochs=3, patience=50, lr=1e-3), dict(epochs=200, patience=1, lr=1.0)))
    assert capped["protocol"] == "tune" and [r["split"] for r in capped["rows"]] == ["validation"]
    hist = capped["stats"]["history"]
    assert hist["epochs_run"] == 3 and len(hist["val"]) == 3 and 0 <= hist["best_val_epoch"] < 3
    # lr 1.0 diverges at once: patience 1 stops it long before its cap of 200
    assert stopped["stats"]["history"]["epochs_run"] < 200


def test_continual_tasks_are_tuned_on_their_first_stage_only():
    task = hn.tasks.make("functions1d_continual", seed=0, length=8, n_train=20, n_test=4)
    train, val = validation_split(task, 0.25)
    rows = torch.cat([train.x, val.x])
    first = task.stages["stage1"].x
    assert len(rows) == len(first) and torch.equal(rows.sort(0).values, first.sort(0).values)


def test_unknown_protocol_and_statistic_are_errors_before_training():
    with pytest.raises(ValueError, match="protocol"):
        get_protocol("nope")
    with pytest.raises(ValueError, match="statistics"):
        _run(Bench("b", "spatial2d", (variant("mlp", hidden=(8,), epochs=1),), params=TINY, seeds=(0,),
                   options={"statistics": ["nope"]}))


def test_error_map_and_atoms_statistics():
    [entry] = _run(Bench("b", "spatial2d", (variant("vn", atoms=(6,), epochs=1, max_iter=20),),
                         params={**TINY, "mode": "reconstruct"}, seeds=(0,),
                         options={"statistics": ["error_map", "atoms"]}))
    em = entry["stats"]["error_map"]
    assert len(em["error"]) == 8 and {v for row in em["split"] for v in row} == {0, 1, 2}
    atoms = entry["stats"]["atoms"]
    assert atoms["shape"] == [6, 8, 8] and atoms["side"] == "S" and len(atoms["usage"]) == 6
    assert atoms["usage"] == sorted(atoms["usage"], reverse=True)


def test_matrix_family_statistics_code_size_pair_choice_and_atoms():
    rec = dict(TINY, mode="reconstruct")
    shared, private, vn = _run(Bench("b", "spatial2d", (
        variant("vn_matrix", atoms_u=4, atoms_s=3, epochs=1, max_iter=30, nonneg=True),
        variant("ctl", "vn_matrix", atoms_u=4, atoms_s=3, factors="private", topk=2, epochs=1, max_iter=30),
        variant("vn", atoms=(5,), epochs=1, max_iter=20, output="reconstruction")), params=rec, seeds=(0,),
        options={"statistics": ["atoms"]}))
    task = hn.tasks.make("spatial2d", seed=0, **rec)
    for entry in (shared, private, vn):
        model = hn.models.make(entry["model"], seed=0, **entry["config"]).fit(task.train)  # the same fit again
        for split, value in entry["stats"]["code_size"].items():
            expect = float(model.active_count(task.tests[split].x).float().mean())
            assert value == pytest.approx(expect, rel=1e-3), (entry["model"], split)
    assert max(private["stats"]["code_size"].values()) <= 2  # top-k bounds the control's code
    atoms = shared["stats"]["atoms"]
    assert atoms["side"] == "u_a s_b^T" and atoms["shape"] == [12, 8, 8]  # 4 x 3 pairs, fewer than 16
    assert atoms["usage"] == sorted(atoms["usage"], reverse=True)
    assert atoms["factors"]["U"]["shape"] == [1, 8, 4] and atoms["factors"]["S"]["shape"] == [1, 8, 3]
    assert private["stats"]["atoms"]["side"].startswith("u_k s_k^T") and "pair_choice" not in shared["stats"]
    [pairs] = _run(Bench("b", "spatial2d", (variant("vn_pairs", atoms_a=8, atoms_b=8, epochs=2, max_iter=50),),
                         params=dict(TINY, mode="decode"), seeds=(0,), options={"statistics": ["atoms"]}))
    for split, fractions in pairs["stats"]["pair_choice"].items():
        assert sum(fractions.values()) == pytest.approx(1.0, abs=1e-3), split
    assert pairs["stats"]["atoms"]["side"] == "u_a v_b^T" and pairs["stats"]["history"]["epochs_run"] >= 1


def test_a_protocol_check_runs_when_the_plan_is_checked(monkeypatch):
    monkeypatch.setattr(_protocols.PROTOCOLS, "items", dict(_protocols.PROTOCOLS.items))
    calls = []

    @register_protocol("staged_test")
    def staged(ctx):
        calls.append("ran")
        return []

    def check(model, task, options):
        if not task.stages:
            raise ValueError(f"task: {task.name!r} has no stages")

    staged.check = check
    bench = Bench("b", "spatial2d", (variant("mlp", hidden=(8,), epochs=1),), params=TINY, seeds=(0,),
                  protocol="staged_test")
    with pytest.raises(ValueError, match=r"^models: 'mlp' \(mlp\) cannot run on task 'spatial2d'.*no stages"):
        plan_bench(None, bench, "quick")
    assert calls == []


def test_history_records_the_epochs_of_backprop_and_vn_fits_alike():
    """Equal budgets are checkable from the records: the ``history`` statistic holds the epochs
    run and the best validation epoch of a gradient model and of a VN (its own epoch loop)."""
    bench = Bench("b", "spatial2d", (variant("mlp", hidden=(8,), epochs=3, patience=3),
                                     variant("vn", atoms=(6,), hidden=(), epochs=3, patience=3, max_iter=10)),
                  params=TINY, seeds=(0,))
    for entry in _run(bench):
        hist = entry["stats"]["history"]
        assert 1 <= hist["epochs_run"] <= 3 and 0 <= hist["best_val_epoch"] < hist["epochs_run"], entry["model"]


def test_models_selects_a_label_alone_and_a_bare_model_name_every_variant():
    """``--models vn_matrix`` runs the ``vn_matrix`` row, not also its control
    ``vn_matrix-private`` (a variant of the same model); a model name that labels no row keeps
    every variant of it."""
    bench = Bench("b", "spatial2d", ("mlp", variant("mlp-wide", "mlp", hidden=(32,)),
                                     variant("vae-small", "vae", latent=2), variant("vae-big", "vae", latent=4)),
                  params=TINY, seeds=(0, 1))
    labels = lambda models: sorted({j.slot["label"] for j in plan_bench(None, bench, "quick", models=models, check=False)})
    assert labels(["mlp"]) == ["mlp"]
    assert labels(["mlp-wide"]) == ["mlp-wide"]
    assert labels(["vae"]) == ["vae-big", "vae-small"]
    assert labels(["mlp", "vae-big"]) == ["mlp", "vae-big"]
    with pytest.raises(ValueError, match=r"^models: \['cnn'\] are not models of bench 'b'"):
        plan_bench(None, bench, "quick", models=["cnn"], check=False)


def test_a_fit_record_names_the_processor_and_kernel_level_that_rounded_it():
    """Records are bit-identical only on the same kernel level (docs/experiments.md, "Reproducibility"):
    every fit entry says which it ran on, read from torch's dispatch, not a constant."""
    import json
    import os
    import subprocess
    import sys

    [entry] = _run(Bench("b", "spatial2d", (variant("mlp", hidden=(8,), epochs=1),), params=TINY, seeds=(0,)))
    m = entry["stats"]["machine"]
    assert set(m) == {"cpu", "cpu_capability", "torch", "torch_threads"}
    assert m["cpu_capability"] == torch.backends.cpu.get_cpu_capability() and m["torch"] == torch.__version__
    assert m["torch_threads"] == torch.get_num_threads() and m["cpu"]
    # torch's own switch forces the portable kernels: the fingerprint follows it
    code = "import json; from hebbnets.measures.speed import platform_fingerprint as f; print(json.dumps(f()))"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "ATEN_CPU_CAPABILITY": "default"},
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["cpu_capability"] == "DEFAULT"
