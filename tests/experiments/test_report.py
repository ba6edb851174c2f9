import math
import re

import pytest
import torch

from hebbnets.experiments import (Bench, Claim, Custom, Figure, RecordStore, ReportContext, ResultsTable, Spec, Text,
                                  build_report, capped_fits, decode_images, encode_images, ood_id_ratio, ratio_to_best,
                                  unrun_line)

BENCH = Bench("b", "toy_atoms", ("vn", "mlp", "cnn"))
SPEC = Spec("s", "Test report", benches=(BENCH,), sections=(
    ResultsTable("b", title="Results"),
    Claim("vn beats mlp out of distribution",
          lambda ctx: (ctx.cell("b", "vn", "ood").mean < ctx.cell("b", "mlp", "ood").mean, "numbers")),
    Custom(lambda ctx: [f"labels: {ctx.labels('b')}", ""]),
    Text("The end."),
))


def _fit(label, seed, id_, ood, params=10):
    return {"key": f"{label}{seed}", "kind": "fit", "model": label, "seed": seed, "config": {}, "task": "toy_atoms",
            "slots": [{"spec": "s", "bench": "b", "label": label, "scale": "quick", "seed": seed}],
            "rows": [{"split": "id", "metric": "mse", "value": id_}, {"split": "ood", "metric": "mse", "value": ood}],
            "stats": {"num_parameters": params}, "commit": "abcdef0123", "dirty": False}


ENTRIES = [_fit("vn", 0, 1.0, 1.2), _fit("vn", 1, 3.0, 1.8), _fit("mlp", 0, 0.5, 5.0),
           {"key": "cnn-sum", "kind": "summary", "model": "cnn", "imported_from": "old.json@abc",
            "slots": [{"spec": "s", "bench": "b", "label": "cnn", "scale": "quick", "seed": None}],
            "rows": [{"split": "id", "metric": "mse", "n": 3, "mean": 0.25, "std": 0.1, "seeds": [0, 1, 2]},
                     {"split": "ood", "metric": "mse", "n": 3, "mean": 4.0, "std": 1.0, "seeds": [0, 1, 2]}],
            "stats": {"num_parameters": 7}},
           # another scale and another spec: never read by this report
           {**_fit("vn", 2, 9.0, 9.0), "key": "smoke", "slots": [{"spec": "s", "bench": "b", "label": "vn",
                                                                  "scale": "smoke", "seed": 2}]},
           {**_fit("vn", 3, 9.0, 9.0), "key": "other", "slots": [{"spec": "t", "bench": "b", "label": "vn",
                                                                  "scale": "quick", "seed": 3}]}]


def test_cells_are_means_and_sample_stds_over_seeds_or_imported_summaries():
    ctx = ReportContext(SPEC, "quick", ENTRIES, out=".")
    vn = ctx.cell("b", "vn", "id")
    assert vn.n == 2 and vn.mean == 2.0 and math.isclose(vn.std, math.sqrt(2)) and vn.seeds == [0, 1]
    mlp = ctx.cell("b", "mlp", "ood")
    assert mlp.n == 1 and math.isnan(mlp.std) and mlp.text() == "5"  # one seed: no "± nan"
    assert vn.text() == "2 ± 1.41"
    cnn = ctx.cell("b", "cnn", "ood")
    assert cnn.imported and cnn.n == 3 and cnn.text() == "4 ± 1"
    assert ctx.labels("b") == ["vn", "mlp", "cnn"]
    assert math.isclose(ood_id_ratio(ctx, "b", "vn", "ood", "mse"), 1.5 / 2.0)
    r, best, err = ratio_to_best(ctx, "b", "vn", "id", "mse")
    assert best == "cnn" and err == 0.25 and r == 8.0
    r, best, _ = ratio_to_best(ctx, "b", "vn", "id", "mse", exclude=("cnn",))
    assert best == "mlp" and r == 4.0


def test_capped_fits_counts_the_fits_the_epoch_cap_ended_not_the_patience_rule():
    def fit(label, seed, epochs, run, best):
        e = _fit(label, seed, 1.0, 1.0)
        return {**e, "config": {"epochs": epochs}, "stats": {"history": {"epochs_run": run, "best_val_epoch": best}}}
    entries = [fit("vn", 0, 60, 60, 59),  # ran to its cap: capped, best at the last epoch (1-based 60)
               fit("vn", 1, 60, 45, 34),  # stopped by patience before the cap
               fit("mlp", 0, 400, 130, 104),  # stopped by patience
               _fit("cnn", 0, 1.0, 1.0)]  # no history (e.g. a closed-form model): not counted
    total, capped = capped_fits(ReportContext(SPEC, "quick", entries, out="."), "b")
    assert total == 3 and capped == {"vn": (2, [60])}


def test_the_configs_table_marks_validation_points_that_ended_at_their_epoch_cap(tmp_path):
    """A point's epochs (from its tune record's history) against the cap it ran under: capped
    points are marked and counted per model, the chosen one named; points recorded before the
    tune protocol kept epochs show ``?`` and are counted apart; without any counts, no column."""
    import json

    from hebbnets.experiments import TuningTable

    def point(lr, value, run=None, cap=None):
        p = {"config": {"lr": lr, "epochs": 200}, "value": value, "point": {"lr": lr}}
        return {**p, **({"epochs_run": run} if run is not None else {}), **({"epochs_cap": cap} if cap else {})}
    doc = {"task": "toy_atoms", "metric": "mse", "models": {
        "mlp": {"config": {"lr": 0.1, "epochs": 200}, "value": 0.5, "search": "grid",
                "points": [point(0.1, 0.5, 200, 200), point(0.2, 0.7, 37, 200), point(0.3, 0.9)]},
        "vn": {"config": {"lr": 0.1, "epochs": 200}, "value": 0.4, "search": "grid",
               "points": [point(0.1, 0.4, 60, 200), point(0.2, 0.6, 200, 200)]}}}
    (tmp_path / "toy_atoms.json").write_text(json.dumps(doc))
    ctx = ReportContext(SPEC, "quick", [], out=tmp_path, configs_dir=tmp_path)
    text = "\n".join(TuningTable("b").render(ctx))
    assert "| epochs |" in text
    assert "| mlp | `lr=0.1` | 0.5 | 200 (cap) |" in text and "| mlp | `lr=0.2` | 0.7 | 37 |" in text
    assert "| mlp | `lr=0.3` | 0.9 | ? |" in text and "| vn | `lr=0.1` | 0.4 | 60 |" in text
    assert ("Validation points that ended at their epoch cap, not by patience: `mlp` 1 of 2 (the chosen point "
            "among them); `vn` 1 of 2. 1 point(s) were recorded without an epoch count (`?`).") in text
    for m in doc["models"].values():  # recorded before tune kept epochs: the table as before
        for p in m["points"]:
            p.pop("epochs_run", None), p.pop("epochs_cap", None)
    (tmp_path / "toy_atoms.json").write_text(json.dumps(doc))
    text = "\n".join(TuningTable("b").render(ctx))
    assert "epochs" not in text.split("| model | point |")[1].splitlines()[0] and "epoch cap" not in text


def test_unrun_line_names_the_labels_and_seeds_without_records_or_the_whole_bench():
    # a summary counts as every seed; vn lacks seed 2, mlp seeds 1 and 2
    assert unrun_line(ReportContext(SPEC, "quick", ENTRIES, out="."), "b") == "- `b`: not run: `vn` seed 2, `mlp` seeds 1, 2."
    every_seed = [_fit(lab, s, 1.0, 1.0) for lab in ("vn", "mlp") for s in (0, 1, 2)] + ENTRIES[3:4]
    assert unrun_line(ReportContext(SPEC, "quick", every_seed, out="."), "b") is None
    only_vn = ReportContext(SPEC, "quick", [_fit("vn", s, 1.0, 1.0) for s in (0, 1, 2)], out=".")
    assert unrun_line(only_vn, "b", " in this round") == "- `b`: not run in this round: `mlp`, `cnn`."
    assert unrun_line(ReportContext(SPEC, "quick", [], out="."), "b") == "- `b`: not run (no records)."
    with pytest.raises(ValueError, match="^bench: "):
        unrun_line(only_vn, "nope")


def test_the_compute_line_sums_each_jobs_own_wall_time_not_only_its_first_fit(tmp_path):
    """A continual job's ``fit_seconds`` is its first stage only (the second is ``partial_fit_seconds``);
    the compute line sums each job's ``seconds`` and falls back to ``fit_seconds`` where a record has no
    ``seconds``."""
    two_stage = _fit("vn", 0, 1.0, 1.0)
    two_stage["stats"] = {"fit_seconds": 1800.0, "partial_fit_seconds": 3600.0, "seconds": 5760.0}
    old = _fit("mlp", 0, 1.0, 1.0)
    old["stats"] = {"fit_seconds": 1440.0}
    store = RecordStore(tmp_path / "records" / "s.jsonl")
    store.put_many([two_stage, old])
    text = build_report(SPEC, store, tmp_path / "out").read_text()
    assert "Compute behind these records: 2.0 h of job time over 2 entries" in text  # (5760 + 1440) / 3600


def test_report_is_deterministic_and_prints_no_nan(tmp_path):
    store = RecordStore(tmp_path / "records" / "s.jsonl")
    store.put_many(ENTRIES)
    a = build_report(SPEC, store, tmp_path / "a").read_text()
    b = build_report(SPEC, store, tmp_path / "b").read_text()
    assert a == b and not re.search(r"\bnan\b", a)
    assert "| vn | 10 | 0,1 | 2 ± 1.41 | 1.5 ± 0.424 | 0.75 |" in a
    assert "| mlp | 10 | 0 | 0.5 | 5 | 10 |" in a
    assert "| cnn | 7 | 0,1,2 (summary) | 0.25 ± 0.1 | 4 ± 1 | 16 |" in a
    assert "id **8** (best cnn); ood **0.375** (best cnn)" in a
    assert "- **vn beats mlp out of distribution**: holds. numbers" in a
    assert "labels: ['vn', 'mlp', 'cnn']" in a and "The end." in a
    assert a.index("The end.") < a.index("## How these numbers were made")  # provenance under the sections
    assert "4 entries (3 fits, 1 imported summaries); 1 imported from earlier result files" in a  # this spec, scale


def test_figures_are_drawn_from_records_or_say_there_is_nothing(tmp_path):
    atoms = encode_images(torch.linspace(-1, 1, 3 * 16).reshape(3, 4, 4))
    entries = [dict(e) for e in ENTRIES[:3]]
    entries[0]["stats"] = {**entries[0]["stats"], "atoms": {"side": "S", "usage": [0.5, 0.2, 0.1], **atoms},
                           "error_map": {"error": [[0.1, 0.2], [0.3, 0.4]], "split": [[0, 1], [2, 2]]}}
    spec = Spec("s", "t", benches=(BENCH,), sections=(
        Figure("id_vs_ood", "scatter", "ID vs OOD", {"benches": ("b",)}),
        Figure("atoms", "atoms", "atoms", {"benches": ("b",)}),
        Figure("error_maps", "maps", "maps", {"benches": ("b",)}),
        Figure("activity", "act", "activity", {"benches": ("b",)}),
    ))
    store = RecordStore(tmp_path / "r.jsonl")
    store.put_many(entries)
    text = build_report(spec, store, tmp_path).read_text()
    for name in ("scatter", "atoms", "maps"):
        png = tmp_path / f"s_{name}.png"
        assert png.read_bytes()[:4] == b"\x89PNG" and f"]({png.name})" in text
    assert "*activity*: no records to draw yet." in text and not (tmp_path / "s_act.png").exists()
    assert build_report(spec, store, tmp_path / "nofig", figures=False).read_text() == text
    with pytest.raises(ValueError, match="kind"):
        Figure("nope", "x", "y")


def test_fits_from_an_earlier_configuration_or_task_size_are_named_in_the_provenance(tmp_path):
    """A fit a run would not reuse (the configuration chosen now or a scalar task parameter differs)
    stays in the tables until rerun, so the report names it; lists are not compared (a task may
    normalise them), validation points are not fits, and a report of current fits has no such line."""
    from hebbnets.experiments import stale_fits

    bench = Bench("b", "toy_atoms", ("vn", "mlp"), params={"n_train": 100, "ood_pairs": ["a+b"]})
    spec = Spec("s", "t", benches=(bench,), sections=(ResultsTable("b"),))
    base = ReportContext(spec, "quick", [], out=".")
    vn, mlp = base.chosen_config("b", "vn"), base.chosen_config("b", "mlp")
    assert vn and mlp, "toy_atoms has chosen configurations to compare against"

    def fit(label, seed, config, n_train=100, pairs=("b+a",), stage=None):
        e = _fit(label, seed, 1.0, 2.0)
        slot = {**e["slots"][0], **({"stage": stage} if stage else {})}
        return {**e, "key": f"{label}{seed}{stage}", "config": dict(config), "slots": [slot],
                "task_params": {"n_train": n_train, "ood_pairs": list(pairs)}}
    current = [fit("vn", 0, vn), fit("mlp", 0, mlp), fit("vn", 9, {**vn, "lam": 7.0}, stage="tune")]
    assert stale_fits(ReportContext(spec, "quick", current, out=".")) == {}
    store = RecordStore(tmp_path / "records" / "s.jsonl")
    store.put_many(current)
    assert "earlier setting" not in build_report(spec, store, tmp_path / "r").read_text()
    stale = current + [fit("vn", 1, vn, n_train=50), fit("vn", 2, {**vn, "lam": 7.0}, n_train=50),
                       fit("mlp", 1, {**mlp, "lr": 9.0})]
    assert stale_fits(ReportContext(spec, "quick", stale, out=".")) == {
        ("b", "vn"): ([1, 2], ["n_train", "lam"]), ("b", "mlp"): ([1], ["lr"])}
    store.put_many(stale)
    text = build_report(spec, store, tmp_path / "s").read_text()
    assert ("`b/vn` seeds 1, 2 (differs in `n_train`, `lam`); `b/mlp` seed 1 (differs in `lr`).") in text


def test_images_round_trip_to_8_bits():
    imgs = torch.randn(5, 7, 3)
    back = decode_images(encode_images(imgs))
    span = (imgs.flatten(1).max(1).values - imgs.flatten(1).min(1).values)[:, None, None]
    assert back.shape == imgs.shape and bool(((back - imgs).abs() <= span / 255 + 1e-3).all())


def test_provenance_names_the_dirty_entries_per_commit_and_whether_they_ran_the_chosen_configuration(tmp_path):
    chosen = ReportContext(SPEC, "quick", [], out=".").chosen_config("b", "vn")
    assert chosen, "toy_atoms has a chosen vn configuration to compare against"
    dirty = [{**_fit("vn", 0, 1.0, 1.0), "config": dict(chosen), "commit": "1111111aaa", "dirty": True},
             {**_fit("vn", 1, 1.0, 1.0), "config": {**chosen, "lam": 123.0}, "commit": "1111111aaa", "dirty": True},
             {**_fit("mlp", 0, 1.0, 1.0), "commit": "2222222bbb", "dirty": False}]
    store = RecordStore(tmp_path / "records" / "s.jsonl")
    store.put_many(dirty)
    text = build_report(SPEC, store, tmp_path / "r").read_text()
    assert "2 computed from a tree with uncommitted changes (1111111: 2; 1 of 2 fits at the configurations chosen now" in text
    assert "2222222:" not in text  # a clean entry is not counted
    store.put_many([{**dirty[1], "config": dict(chosen)}])  # the same slot, now at the chosen configuration
    assert "(1111111: 2; all at the configurations chosen now" in build_report(SPEC, store, tmp_path / "s").read_text()
