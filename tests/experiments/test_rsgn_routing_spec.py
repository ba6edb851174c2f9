"""The rsgn report's routing claims on hand-made records: the goal per task (dense comparison on
the paper tasks, S > 1 against S = 1 and the trivial classifiers on the own tasks, all at <= 2 %
activity) and the design screen."""
from hebbnets.experiments import ReportContext
from hebbnets.experiments.specs import rsgn as rs

R = rs.ROUTING


def _fit(bench, task, label, seed, acc, activity=0.015, extra_rows=()):
    rows = [{"split": "id", "metric": "accuracy", "value": acc, "activity": activity}, *extra_rows]
    return {"key": f"{bench}{label}{seed}", "kind": "fit", "model": "rsgn", "seed": seed, "config": {"n_steps": 5},
            "task": task, "slots": [{"spec": "rsgn", "bench": bench, "label": label, "scale": "quick", "seed": seed}],
            "rows": rows, "stats": {"num_parameters": 1}}


def _trivial(task_bench, task, accs):
    return [_fit(task_bench, task, lab, 0, a) for lab, a in accs.items()]


def _ctx(entries):
    return ReportContext(rs.SPEC, "quick", entries, out=".")


def _seeds(bench, task, label, accs, activity=0.015):
    return [_fit(bench, task, label, s, a, activity) for s, a in enumerate(accs)]


def test_paper_task_goal_needs_the_dense_model_within_2_pp_at_low_activity():
    triv = _trivial("trivial_longrange", "rsgn_longrange", {"centroid": 0.92, "lda": 0.91, "lda-ends": 1.0})
    dense = _seeds("paper_longrange", "rsgn_longrange", "rsgn_parity-e50", [0.96, 0.955, 0.965])
    near = _seeds("budget_longrange", "rsgn_longrange", "n1024-e50", [0.95, 0.945, 0.95])
    check = R.goal_claim("budget_longrange")
    assert check(_ctx(triv + dense + near)).verdict is True  # 1.2 pp below
    far = _seeds("budget_longrange", "rsgn_longrange", "n1024-e50", [0.90, 0.91, 0.92])
    assert check(_ctx(triv + dense + far)).verdict is False
    busy = _seeds("budget_longrange", "rsgn_longrange", "n1024-e50", [0.97, 0.97, 0.97], activity=0.05)
    v = check(_ctx(triv + dense + busy))
    assert v.verdict is False and "5.00 % before the cap" in v.evidence  # accurate, but not sparse
    assert check(_ctx(triv + dense)).verdict is None  # no sparse run
    # the default misses, another design tried meets it: holds, and the evidence names both
    design = _seeds("budget_longrange", "rsgn_longrange", "n1024-e50-readsteps", [0.95, 0.95, 0.955])
    v = check(_ctx(triv + dense + far + design))
    assert v.verdict is True and "`default`:" in v.evidence and "`-readsteps`:" in v.evidence


def test_own_task_goal_needs_steps_to_help_and_every_trivial_classifier_beaten():
    triv = _trivial("trivial_xor_range", "rsgn_xor_range", {"centroid": 0.23, "lda": 0.27, "lda-ends": 0.22})
    check = R.goal_claim("budget_xor_range")
    s5 = _seeds("budget_xor_range", "rsgn_xor_range", "n1024-e50", [0.60, 0.62, 0.61])
    s1 = _seeds("budget_xor_range", "rsgn_xor_range", "n1024-e50-steps1", [0.45, 0.46, 0.44])
    assert check(_ctx(triv + s5 + s1)).verdict is True
    s1_same = _seeds("budget_xor_range", "rsgn_xor_range", "n1024-e50-steps1", [0.60, 0.63, 0.59])
    assert check(_ctx(triv + s5 + s1_same)).verdict is False  # within seed noise: not "by more than 2 std"
    one = _seeds("budget_xor_range", "rsgn_xor_range", "n1024-e50-steps1", [0.45])
    assert check(_ctx(triv + s5 + one)).verdict == "undecided"  # one seed of S = 1
    s1_better = _seeds("budget_xor_range", "rsgn_xor_range", "n1024-e50-steps1", [0.70, 0.71, 0.72])
    assert check(_ctx(triv + s5 + s1_better)).verdict is False
    low = _seeds("budget_xor_range", "rsgn_xor_range", "n1024-e50", [0.26, 0.25, 0.26])
    low1 = _seeds("budget_xor_range", "rsgn_xor_range", "n1024-e50-steps1", [0.20, 0.20, 0.21])
    assert check(_ctx(triv + low + low1)).verdict is False  # S > 1 helps, but below LDA


def test_design_claim_holds_when_one_design_makes_steps_help_beyond_noise():
    check = R.design_claim("routing_tree")
    base = _seeds("routing_tree", "rsgn_tree", "n1024", [0.09, 0.08, 0.085]) + \
        _seeds("routing_tree", "rsgn_tree", "n1024-steps1", [0.09, 0.085, 0.08])
    assert check(_ctx(base)).verdict is False  # the only design measured: S = 1 as good
    won = _seeds("routing_tree", "rsgn_tree", "n1024-readsteps", [0.30, 0.31, 0.29]) + \
        _seeds("routing_tree", "rsgn_tree", "n1024-readsteps-steps1", [0.10, 0.11, 0.09])
    v = check(_ctx(base + won))
    assert v.verdict is True and "n1024-readsteps" in v.evidence
    one = _seeds("routing_tree", "rsgn_tree", "n1024-surrogate", [0.30]) + \
        _seeds("routing_tree", "rsgn_tree", "n1024-surrogate-steps1", [0.10])
    assert check(_ctx(base + one)).verdict == "undecided"  # one seed cannot decide
    assert check(_ctx([])).verdict is None


def test_the_routing_tables_render_from_the_records():
    entries = _seeds("budget_tree", "rsgn_tree", "n1024-e50", [0.2, 0.3]) + \
        _trivial("trivial_tree", "rsgn_tree", {"centroid": 0.07, "lda": 0.09, "lda-ends": 0.09})
    text = "\n".join(R.budget_table(_ctx(entries)))
    assert "| tree | n1024-e50 | 5 | 2 | 25.0 ± 7.1 | — | 1.50 |" in text
    assert R.flow_table(_ctx(entries)) == ["No gradient-flow records yet.", ""]
