"""The vn_claims report's computed sections, on hand-made records: the forgetting claims (a model
that forgets nothing because it never learns the second stage must not win the final-error claim),
the amortised warm-start cell, and the coverage section that states what was not run."""
import pytest

from hebbnets.experiments import ReportContext
from hebbnets.experiments.reporting import narration_vn_claims as nc
from hebbnets.experiments.specs import vn_claims as vc

BENCH = "functions1d_continual"
METRIC = "mse_missing"


def _fit(bench, label, seed, rows):
    """``rows``: {(split, metric): value}."""
    return {"key": f"{bench}{label}{seed}", "kind": "fit", "model": label.split("+")[0], "seed": seed, "config": {},
            "task": bench, "slots": [{"spec": "vn_claims", "bench": bench, "label": label, "scale": "quick", "seed": seed}],
            "rows": [{"split": s, "metric": m, "value": v} for (s, m), v in rows.items()], "stats": {}}


def _continual(label, seed, after1, after2, both):
    return _fit(BENCH, label, seed, {("id_stage1", f"after_stage1:{METRIC}"): after1, ("id_stage1", METRIC): after2,
                                     ("id_stage1", "forgetting_ratio"): after2 / after1, ("id", METRIC): both})


def _ctx(entries):
    return ReportContext(vc.SPEC, "quick", entries, out=".")


def _forgetting(ctx):
    v = nc.forgetting_claim(BENCH, vc.VN_LABELS, vc.KEEP)(ctx)
    return v.verdict, v.evidence


def _final(ctx):
    v = nc.final_claim(BENCH, vc.VN_LABELS)(ctx)
    return v.verdict, v.evidence


def _vn_vs_mlp(ctx):
    v = nc.vn_vs_mlp(ctx)
    return v.verdict, v.evidence


# (stage 1 after 1, stage 1 after 2, both after 2) per label; two seeds with a small offset
TABLE = {"vn": (0.10, 0.11, 0.12), "mlp": (0.10, 0.60, 0.40), "mlp+ewc100": (0.10, 0.30, 0.20),
         "mlp+ewc10000": (0.10, 0.10, 0.30)}


def _entries(table=TABLE, seeds=(0, 1)):
    return [_continual(lab, s, a * (1 + 0.01 * s), b * (1 + 0.01 * s), c) for lab, (a, b, c) in table.items() for s in seeds]


def test_forgetting_alone_and_the_final_error_can_disagree():
    ctx = _ctx(_entries())
    # mlp+ewc10000 forgets nothing (ratio 1.0 < vn's 1.1) because it barely learns stage 2
    held, evidence = _forgetting(ctx)
    assert held is False and "vn 1.1 ± 0" in evidence and "mlp+ewc10000 1 ± 0" in evidence
    held, evidence = _final(ctx)
    assert held is True and "best VN row vn, best backprop row mlp+ewc100" in evidence
    v = nc.final_claim(BENCH, vc.VN_LABELS)(ctx)
    assert v.reading == "vn" and v.against.startswith("mlp+ewc100") and v.effect.startswith("vn: 0.6x")
    held, evidence = _vn_vs_mlp(ctx)
    assert held is True and "functions1d_continual: vn 1.1 ± 0 < mlp 6 ± 0" in evidence
    worse = {**TABLE, "vn": (0.10, 0.90, 0.50)}
    assert _vn_vs_mlp(_ctx(_entries(worse)))[0] is False
    assert _final(_ctx(_entries(worse)))[0] is False


def test_a_lower_mean_within_the_interval_is_not_resolvable():
    # vn lower than the best backprop row in the mean on every comparison, but its seeds spread over it
    entries = [_continual("vn", s, 0.10, 0.10 * f, 0.18 * f) for s, f in enumerate((0.5, 1.0, 1.5))]
    entries += [_continual("mlp", s, 0.10, 0.10 * f, 0.20 * f) for s, f in enumerate((0.98, 1.0, 1.02))]
    ctx = _ctx(entries)
    assert _final(ctx)[0] == "not resolvable at this size"
    assert nc.final_claim(BENCH, vc.VN_LABELS)(ctx).holds is None
    # the same means with little spread: the interval lies below 1, so the claim holds
    tight = [_continual("vn", s, 0.10, 0.10, 0.18 * f) for s, f in enumerate((0.99, 1.0, 1.01))]
    assert _final(_ctx(tight + entries[3:]))[0] is True
    # one seed a side: no interval to decide with
    assert _final(_ctx([entries[0], entries[3]]))[0] == "undecided"
    assert nc.lower_beyond_interval([(None, None)]) == "undecided"


def test_claims_without_records_are_not_measured():
    ctx = _ctx([])
    assert _forgetting(ctx)[0] is None
    assert _final(ctx)[0] is None
    assert _vn_vs_mlp(ctx)[0] is None


def test_coverage_names_missing_benches_rows_and_seeds():
    seeds = next(b for b in vc.CONTINUAL if b.name == BENCH).seeds  # every seed the spec plans there
    entries = [e for e in _entries(seeds=seeds) if not (e["slots"][0]["label"] == "mlp" and e["seed"] == 2)]
    entries = [e for e in entries if e["slots"][0]["label"] != "mlp+ewc10000"]
    text = "\n".join(nc.coverage(_ctx(entries)))
    assert (f"`{BENCH}`: not run: `mlp+ewc1`, `mlp+ewc10000`, `mlp+ewc1000000`, `mlp-replay`, `mlp-joint`, "
            "`vector_code_ff`, `vn_implicit`, `vn-dense`, `mlp` seed 2."
            in text)
    assert "`mnist_continual`: not run (no records)." in text
    assert f"`{BENCH}/vn`" not in text  # every seed present


def test_warm_start_cell_says_when_plain_fistas_energy_is_never_reached():
    values = {"warm_start_speedup_equal_energy": [], "warm_start_speedup": [1.0, 1.2]}
    assert nc.warm(lambda m: values.get(m, [])) == "not reached (1.1 ± 0.14 at the full budget)"
    values["warm_start_speedup_equal_energy"] = [3.0, 5.0]
    assert nc.warm(lambda m: values.get(m, [])) == "4 ± 1.4"


@pytest.mark.parametrize("values, text", [([1024.0, 1024.0], "1024 ± 0"), ([3.0], "3"), ([], "—"), ([2.0, 3.0], "2.5 ± 0.707")])
def test_counts_print_without_exponent(values, text):
    assert nc._ms_count(values) == text


def test_amortised_rows_at_an_earlier_configuration_are_flagged():
    """The amortised rows take the chosen `vn` of each task; when a later search chose another
    configuration, the configs list says so and gives the rerun command."""
    bench = next(b for b in vc.AMORTISED if b.name == "amortised_functions1d_masked")
    chosen = _ctx([]).configs(bench.configs)["models"]["vn"]["config"]
    def listing(config):
        e = _fit(bench.name, "vn", 0, {("id", "error_ratio"): 1.0})
        e["config"] = config
        return "\n".join(nc.amortised_configs(_ctx([e])))
    line = next(x for x in listing(dict(chosen)).splitlines() if x.startswith("- `functions1d_masked`"))
    assert "Not the configuration chosen now" not in line
    line = next(x for x in listing({**chosen, "lam": 123.0}).splitlines() if x.startswith("- `functions1d_masked`"))
    assert f"**Not the configuration chosen now** (now: `lam={chosen['lam']}`)" in line
    assert "--benches amortised_functions1d_masked" in line


def test_an_amortised_row_inferring_at_the_training_lam_says_so():
    bench = vc.AMORTISED[0].name
    entries = [{"key": f"k{seed}", "kind": "fit", "model": "vn", "seed": seed, "commit": "abc1234",
                "config": {"atoms": [8], "lam": 0.05, "test_lam": 0.01}, "rows": [], "stats": {},
                "slots": [{"spec": "vn_claims", "bench": bench, "label": "vn", "scale": "quick", "seed": seed}]}
               for seed in (0, 1, 2)]
    ctx = ReportContext(vc.SPEC, "quick", entries, out=".")
    text = "\n".join(nc.amortised_configs(ctx))
    assert "infer at the training `lam=0.05` here, not at the test-time `lam=0.01` the `vn_benchmarks` row" in text
    for e in entries:
        e["config"]["test_lam"] = 0.05
    assert "infer at the training" not in "\n".join(nc.amortised_configs(ReportContext(vc.SPEC, "quick", entries, out=".")))


def test_an_amortised_row_names_the_spec_whose_row_it_measures():
    names = {b.name: nc._source_spec(b) for b in vc.AMORTISED}
    assert names["amortised_nbody"] == names["amortised_mnist_transform"] == "vn_dynamics"
    assert names["amortised_spatial2d_decode"] == names["amortised_functions1d_masked"] == "vn_benchmarks"


def test_the_amortised_claim_counts_splits_and_lists_the_missed_ones_in_a_note():
    def row(bench, split, speedup, error):
        return _fit(bench, "vn", 0, {(split, "speedup_equal_energy"): speedup, (split, "error_ratio"): error})
    a, b = vc.AMORTISED[0].name, vc.AMORTISED[1].name
    v = nc.amortised_claim(vc.GOAL_SPEEDUP, vc.GOAL_ERROR)(_ctx([row(a, "id", 20.0, 1.0), row(b, "id", 5.0, 1.0)]))
    assert v.verdict is False and v.evidence.startswith("met on 1 of 2 benchmark splits") and v.reading == "AmortisedVN"
    assert any(n.startswith(f"Not met on {b.removeprefix('amortised_')}/id") for n in v.notes)
    assert nc.amortised_claim(vc.GOAL_SPEEDUP, vc.GOAL_ERROR)(_ctx([])).verdict is None


def test_the_fields_continual_metrics_from_the_error_matrix():
    from hebbnets.experiments.reporting import narration_vn_claims as nc

    R = {"R11": 0.1, "R12": 0.5, "R21": 0.3, "R22": 0.2}  # errors: stage 2 raised stage 1's error by 0.2
    m = nc.continual_metrics(R)
    assert m["average"] == 0.25 and m["zero_shot"] == 0.5 and m["fwt"] != m["fwt"]  # no untrained error: NaN
    assert abs(nc.continual_metrics({**R, "B2": 0.8})["fwt"] - 0.3) < 1e-12  # stage 1 lowered stage 2's error
    assert abs(m["bwt"] - 0.2) < 1e-12 and m["forgetting"] == m["bwt"]  # positive: forgetting (errors)
    better = nc.continual_metrics({**R, "R21": 0.05})
    assert better["bwt"] < 0  # stage 2 helped stage 1: backward transfer


def _joint(label, seed, stage1, stage2, both):
    e = _fit(BENCH, label, seed, {("id_stage1", METRIC): stage1, ("id_stage2", METRIC): stage2, ("id", METRIC): both})
    e["options"] = {"schedule": "joint"}
    return e


def test_joint_training_is_a_reference_never_the_best_continual_row():
    # the jointly trained MLP has the lowest error on both stages; it is shown, never the backprop row a claim beats
    entries = _entries() + [_joint("mlp-joint", s, 0.05, 0.05, 0.01) for s in (0, 1)]
    ctx = _ctx(entries)
    held, evidence = _final(ctx)
    assert held is True and "best backprop row mlp+ewc100; joint training (the reference, not a continual row): mlp-joint" in evidence
    assert "mlp-joint" not in _forgetting(ctx)[1]
    assert nc.continual_rows(ctx, BENCH) == [lab for lab in ctx.labels(BENCH) if lab != "mlp-joint"]
    [joint] = [nc.error_matrix(ctx, BENCH, "mlp-joint")[0]]
    assert joint["R21"] == 0.05 and joint["R22"] == 0.05 and all(v != v for v in (joint["R11"], joint["R12"]))  # NaN


def test_the_metrics_table_gives_intransigence_against_joint_training():
    rows = {("id_stage1", f"after_stage1:{METRIC}"): 0.1, ("id_stage2", f"after_stage1:{METRIC}"): 0.9,
            ("id_stage1", METRIC): 0.3, ("id_stage2", METRIC): 0.2}
    entries = [_fit(BENCH, "mlp", s, rows) for s in (0, 1)] + [_joint("mlp-joint", s, 0.05, 0.05, 0.05) for s in (0, 1)]
    table = "\n".join(nc.metrics_table(BENCH)(_ctx(entries)))
    assert "| mlp | 2 | 0.1 ± 0 | 0.9 ± 0 | 0.3 ± 0 | 0.2 ± 0 | 0.25 ± 0 | 0.2 ± 0 | 0.15 ± 0 | — |" in table
    assert "| mlp-joint | 2 | — | — | 0.05 ± 0 | 0.05 ± 0 | 0.05 ± 0 | — | — | — |" in table
    rows[("id_stage2", f"before:{METRIC}")] = 1.0  # the untrained model's error on stage 2: FWT = 1.0 - 0.9
    table = "\n".join(nc.metrics_table(BENCH)(_ctx([_fit(BENCH, "mlp", s, rows) for s in (0, 1)])))
    assert "| mlp | 2 | 0.1 ± 0 | 0.9 ± 0 | 0.3 ± 0 | 0.2 ± 0 | 0.25 ± 0 | 0.2 ± 0 | — | 0.1 ± 0 |" in table


def test_the_spec_plans_an_ewc_sweep_replay_and_joint_training():
    for bench in vc.CONTINUAL:
        labels = [v.label for v in bench.variants]
        assert [lab for lab in labels if lab.startswith("mlp+ewc")] == [f"mlp+ewc{int(x)}" for x in sorted(vc.EWC)]
        assert len(vc.EWC) >= 4
        assert bench.variant("mlp-joint").options["schedule"] == "joint"
        assert bench.variant("mlp-replay").options == {"schedule": "replay", "replay_fraction": vc.REPLAY_FRACTION}


def test_the_stage_training_table_counts_cap_hits_and_records_without_stages():
    def stages(first, second):
        return [{"stage": "stage1", "epochs_run": first, "epochs": 40, "at_cap": first >= 40, "best_val_epoch": 0},
                {"stage": "stage2", "epochs_run": second, "epochs": 40, "at_cap": second >= 40, "best_val_epoch": 0}]
    rows = {("id_stage1", METRIC): 0.3}
    entries = [_fit(BENCH, "mlp", s, rows) for s in (0, 1, 2)]
    entries[0]["stats"]["stages"], entries[1]["stats"]["stages"] = stages(40, 10), stages(20, 12)
    text = "\n".join(nc.stage_training_table(_ctx(entries)))
    assert "1 of its records were run before the protocol measured them" in text
    assert "| mlp | 2 | stage1 | 30 ± 14.1 | 40 | 1 of 2 |" in text
    assert "| mlp | 2 | stage2 | 11 ± 1.41 | 40 | 0 of 2 |" in text
    assert "No records yet." in text  # the other benches
    entries[0]["stats"].pop("stages"), entries[1]["stats"].pop("stages")
    assert "None of its 3 records has per-stage training lengths" in "\n".join(nc.stage_training_table(_ctx(entries)))


# -- same-structure controls on a continual bench (issue 29) ------------------------------------------
def _mechanism(ctx, controls=None):
    controls = controls if controls is not None else {"vn-dense": "dense", "mlp+ewc1": "a second control (any spec row serves)"}
    return nc.mechanism_claim(BENCH, vc.VN_LABELS, controls)(ctx)


def _spread(label, both, seeds=(0, 1, 2), spread=0.01):
    """``label`` continual records whose error on both stages is ``both`` times 1 -/+ ``spread``."""
    return [_continual(label, s, 0.10, 0.11, both * (1 + spread * (s - 1))) for s in seeds]


def test_controls_enter_neither_side_of_the_forgetting_and_final_claims():
    # a control that forgets nothing and has the lowest final error: it must not become the best backprop row
    entries = _entries(seeds=(0, 1, 2)) + [_continual("vn-dense", s, 0.10, 0.10, 0.01) for s in (0, 1, 2)]
    ctx = _ctx(entries)
    v = nc.final_claim(BENCH, vc.VN_LABELS, (), ("vn-dense",))(ctx)
    assert v.verdict is True and "best backprop row mlp+ewc100" in v.evidence and "vn-dense" not in v.evidence
    assert nc.final_claim(BENCH, vc.VN_LABELS)(ctx).verdict is False  # counted as a backprop row, it would win
    f = nc.forgetting_claim(BENCH, vc.VN_LABELS, vc.KEEP, (), ("vn-dense",))(ctx)
    assert "vn-dense" not in f.evidence
    table = "\n".join(nc.forgetting_table(BENCH, ("vn-dense",))(ctx))
    assert "| vn-dense |" not in table and "| vn |" in table and "Controls `vn-dense`: the mechanism line" in table


def test_the_continual_mechanism_verdict_from_the_controls():
    base = _spread("vn", 0.12) + _spread("mlp", 0.40)
    # every control worse beyond its interval: the mechanism is needed
    v = _mechanism(_ctx(base + _spread("vn-dense", 0.30) + _spread("mlp+ewc1", 0.50)))
    assert v.verdict == "holds, and the mechanism is needed" and v.reading == "vn"
    assert "`vn-dense` / `vn`: id 2.5x" in v.evidence and v.against == "`vn-dense` (same structure)"
    # one control as good: only the structure
    v = _mechanism(_ctx(base + _spread("vn-dense", 0.12) + _spread("mlp+ewc1", 0.50)))
    assert v.verdict == "holds only through the structure" and "as good within it: `vn-dense`" in v.evidence
    # a control without records on the VN row's seeds: undecided, naming it
    v = _mechanism(_ctx(base + _spread("vn-dense", 0.30) + _spread("mlp+ewc1", 0.50, seeds=(0, 1))))
    assert v.verdict == "undecided" and "control `mlp+ewc1` not run on the VN row's 3 seeds" in v.evidence
    # one control as good is enough for "only the structure", even while another has not run
    v = _mechanism(_ctx(base + _spread("vn-dense", 0.12)))
    assert v.verdict == "holds only through the structure"


def test_no_continual_win_leaves_nothing_to_credit():
    v = _mechanism(_ctx(_spread("vn", 0.50) + _spread("mlp", 0.40) + _spread("vn-dense", 0.10) + _spread("mlp+ewc1", 0.1)))
    assert v.verdict == "does not hold" and "no win to credit" in v.evidence
    assert _mechanism(_ctx([])).holds is None


def test_the_spec_plans_controls_where_a_continual_claim_rests_on_a_vn_row():
    for bench, controls in vc.CONTROLS.items():
        labels = {v.label for v in vc.SPEC.bench(bench).variants}
        assert set(controls) <= labels and not set(controls) & set(vc.VN_LABELS)
    keys = [c.key for c in vc.SPEC.sections[0].claims]
    assert "nbody_continual: the VN's continual win needs its mechanism" in keys
