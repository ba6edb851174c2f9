"""The vn_dynamics report's computed sections, on hand-made records: which models count as
baselines, trivial baselines and references, and when each claim holds."""
import pytest

from hebbnets.experiments import ReportContext
from hebbnets.experiments.reporting import narration_vn_dynamics as nd
from hebbnets.experiments.specs import vn_dynamics as vd

NB = vd.NB_ROLES


def _paper(ctx):
    return nd.paper_claim("nbody", NB, "mse", vd.ID_BAND, vd.OOD_BAND)(ctx)


def _fit(label, seed, values):
    """``values``: {(split, metric): value}."""
    return {"key": f"{label}{seed}", "kind": "fit", "model": label, "seed": seed, "config": {}, "task": "nbody",
            "slots": [{"spec": "vn_dynamics", "bench": "nbody", "label": label, "scale": "quick", "seed": seed}],
            "rows": [{"split": s, "metric": m, "value": v} for (s, m), v in values.items()],
            "stats": {"num_parameters": 1}}


def _ctx(table):
    """``table``: {label: {split: (next-step mse, rollout mse)}}, two seeds with the same values."""
    entries = [_fit(lab, seed, {(s, m): v for s, pair in splits.items() for m, v in zip(("mse", "rollout_mse"), pair)})
               for lab, splits in table.items() for seed in (0, 1)]
    return ReportContext(vd.SPEC, "quick", entries, out=".")


TABLE = {
    "no_change": {"id": (1.0, 0.3), "ood_forces": (1.0, 0.3)},  # a reference: never a baseline or "learned"
    "window_linear": {"id": (0.3, 0.12), "ood_forces": (0.4, 0.15)},
    "system_ridge": {"id": (0.4, 0.18), "ood_forces": (0.6, 0.20)},
    "vn_applied_set": {"id": (0.05, 0.08), "ood_forces": (0.19, 0.17)},
    "set_mlp": {"id": (0.03, 0.03), "ood_forces": (0.39, 0.15)},
    "gnn": {"id": (0.07, 0.06), "ood_forces": (0.17, 0.11)},
}


def test_trivial_baselines_are_compared_with_the_best_learned_model_per_metric():
    ctx = _ctx(TABLE)
    nxt, roll = nd.trivial_ratios(ctx, "nbody", NB, "mse"), nd.trivial_ratios(ctx, "nbody", NB, "rollout_mse")
    assert nxt == pytest.approx({"id": 0.3 / 0.03, "ood_forces": 0.4 / 0.17})
    assert roll == pytest.approx({"id": 0.12 / 0.03, "ood_forces": 0.15 / 0.11})
    assert nd.composition_claim("nbody", NB, "mse", 2.0)(ctx).verdict is True  # >= 2x on every split
    v = nd.composition_claim("nbody", NB, "rollout_mse", 2.0)(ctx)
    assert v.verdict is False and any("On ood_forces a trivial baseline comes within 2x" in n for n in v.notes)
    assert not any("On id" in n for n in v.notes)  # 4x on id
    assert v.effect.endswith("(ood_forces, the smallest)")
    note = nd.headline_note(ctx, "nbody", NB)
    assert "2.35x the best learned model's on the next step and 1.36x on the 5-step rollout: the next step" in note
    table = "\n".join(nd.trivial_table("nbody", NB)(ctx))
    assert "| ood_forces | 1 | 0.4 | 0.6 | gnn 0.17 | 2.35 |" in table


def test_the_paper_claim_counts_trivial_baselines_but_not_the_reference():
    ctx = _ctx(TABLE)
    v = _paper(ctx)
    # vn_applied_set: id 0.05 / 0.03 (set_mlp), ood_forces 0.19 / 0.17 (gnn): neither parity nor 0.2x
    assert v.verdict is False and "vn_applied_set: id 1.67, ood_forces 1.12" in v.evidence
    assert v.reading == "vn_applied_set" and v.against == "set_mlp (id), gnn (ood_forces)"
    assert any("Better than every baseline: no reading on any split" in n for n in v.notes)
    better = {**TABLE, "vn_applied_set": {"id": (0.035, 0.03), "ood_forces": (0.03, 0.05)}}
    v = _paper(_ctx(better))
    assert v.verdict is True and v.evidence.startswith("Under vn_applied_set")
    one_split = {**TABLE, "vn_applied_set": {"id": (0.06, 0.08), "ood_forces": (0.1, 0.1)}}
    assert any("vn_applied_set on ood_forces only" in n for n in _paper(_ctx(one_split)).notes)
    # without the trivial baselines, the no-change reference alone is no baseline
    alone = {k: v for k, v in TABLE.items() if k in ("no_change", "vn_applied_set")}
    assert _paper(_ctx(alone)).verdict is None


def test_vn_applied_set_against_set_mlp_on_the_ood_splits_only():
    ctx = _ctx(TABLE)
    v = nd.set_claim("nbody")(ctx)
    assert v.verdict is True and "ood_forces 0.19 vs 0.39" in v.evidence  # worse ID does not decide it
    assert v.against.startswith("set_mlp") and v.reading == "vn_applied_set"
    worse = {**TABLE, "set_mlp": {"id": (0.03, 0.03), "ood_forces": (0.18, 0.15)}}
    assert nd.set_claim("nbody")(_ctx(worse)).verdict is False


def test_cap_note_counts_only_fits_that_the_epoch_cap_ended():
    def fit(label, seed, epochs_run, cap):
        e = _fit(label, seed, {("id", "mse"): 0.1})
        e["config"] = {"epochs": cap}
        e["stats"]["history"] = {"epochs_run": epochs_run, "best_val_epoch": epochs_run - 1}
        return e
    entries = [fit("gnn", 0, 100, 100), fit("gnn", 1, 40, 100),  # capped, stopped by patience
               fit("vn_applied_set", 0, 100, 100), fit("vn_applied_set", 1, 100, 100),
               _fit("window_linear", 0, {("id", "mse"): 0.3})]  # no history: not a trained fit
    lines = nd.cap_note(ReportContext(vd.SPEC, "quick", entries, out="."))
    assert lines[0] == "- nbody: the epoch cap ended 3 of 4 trained fits (per model: vn_applied_set 2/2, gnn 1/2)."
    assert not any("epoch cap ended" in line for line in nd.cap_note(ReportContext(vd.SPEC, "quick", entries[-1:], out=".")))


def test_budgets_and_cap_note_name_every_cap_other_than_the_benchs():
    def fit(label, seed, cap, epochs_run=20):
        e = _fit(label, seed, {("id", "mse"): 0.1})
        e["config"] = {"epochs": cap}
        e["stats"]["history"] = {"epochs_run": epochs_run, "best_val_epoch": epochs_run - 1}
        return e
    # the package's configs: gnn and set_mlp chosen at nbody's bench cap, mlp searched at 1000; the fits below
    # raise gnn's
    cap = vd.NBODY.tuning["gnn"].base["epochs"]
    assert vd.NBODY.tuning["mlp"].base["epochs"] == 1000 != cap and vd.NBODY.tuning["set_mlp"].base["epochs"] == cap
    chosen = ReportContext(vd.SPEC, "quick", [], out=".").configs(vd.NBODY.configs)["models"]
    gnn_search, set_search = chosen["gnn"]["config"]["epochs"], chosen["set_mlp"]["config"]["epochs"]
    raised = 3 * cap
    entries = [fit("gnn", 0, raised), fit("gnn", 1, raised, epochs_run=raised), fit("mlp", 0, 1000),
               fit("set_mlp", 0, set_search), _fit("no_change", 0, {("id", "mse"): 1.0})]
    ctx = ReportContext(vd.SPEC, "quick", entries, out=".")
    note = "\n".join(nd.cap_note(ctx))
    assert "per model: gnn 1/2" in note  # the fit that ran all of its raised cap
    assert f"caps other than the bench's {cap} epochs" in note
    assert f"gnn: {gnn_search} in the search, {raised} in the fits; mlp: 1000 in the search and the fits." in note
    assert ("set_mlp:" in note) == (set_search != cap)  # named only where it left the bench's rule
    rows = {line.split(" | ")[1]: line for line in nd.budgets(ctx) if line.startswith("| nbody")}
    assert f" | {gnn_search} / {raised} | 20 (19), {raised} ({raised - 1}) |" in rows["gnn"]
    assert f" | {set_search} / {set_search} | " in rows["set_mlp"] and " | 1000 / 1000 | " in rows["mlp"]
    assert " | — | — |" in rows["no_change"]  # neither searched nor trained
    # the spec's raised cap of vn_applied's mnist transform fits reaches its runs
    assert vd.MNIST_TRANSFORM.variant("vn_applied").config["epochs"] == vd.APPLIED_REFIT_EPOCHS > \
        vd.MNIST_TRANSFORM.tuning["vn_applied"].base["epochs"]


def test_the_cut_section_states_this_runs_sizes_and_searches():
    ctx = ReportContext(vd.SPEC, "quick", [], out=".")
    cuts, nbody, mnist = ("\n".join(f(ctx)) for f in (nd.cuts, nd.nbody_text, nd.mnist_text))
    nb, mn = vd.NBODY.at("quick").params, vd.MNIST_TRANSFORM.at("quick").params
    assert f"{nb['n_train']:,} training systems" in cuts and f"{nb['n_train']:,} training systems" in nbody
    assert f"{mn['n_train']:,} training samples" in cuts and f"{mn['n_train']:,} training samples" in mnist
    # each bench says whether it trains on the task's quick-scale size or what it was cut from
    mn_cut = "(no cut)" if mn["n_train"] == 3000 else "(cut from 3,000)"
    assert f"{mn['n_train']:,} training samples {mn_cut}" in cuts
    nb_cut = "(no cut)" if nb["n_train"] == 4000 else "(cut from 4,000)"
    assert f"{nb['n_train']:,} training systems {nb_cut}" in cuts
    # and whether its epoch cap is the design's 200
    nb_cap = vd.NBODY.tuning["gnn"].base["epochs"]
    assert f"at most {nb_cap} epochs {'(no cut)' if nb_cap >= 200 else '(cut from 200)'}" in cuts
    for bench in vd.BENCHES:  # every tuned model of a bench gets the count the section states
        counts = {s.n_points for s in bench.tuning.values()}
        assert counts == {nd._points(bench)}
        assert f"{nd._points(bench)} validation points per tuned model" in cuts


def _spread_ctx(table):
    """``table``: {label: {split: next-step mse}}, three seeds at 0.9x, 1x and 1.1x the value."""
    entries = [_fit(lab, seed, {(s, "mse"): v * f for s, v in splits.items()})
               for lab, splits in table.items() for seed, f in enumerate((0.9, 1.0, 1.1))]
    return ReportContext(vd.SPEC, "quick", entries, out=".")


WIN = {"vn_applied_set": {"id": 0.05, "ood_forces": 0.10, "ood_both": 0.5},
       "gnn": {"id": 0.04, "ood_forces": 0.20, "ood_both": 0.4},
       "applied_set_code_ff": {"id": 0.01, "ood_forces": 0.01, "ood_both": 0.01}}


def test_controls_are_never_baselines_nor_learned_models():
    ctx = _spread_ctx(WIN)
    assert "applied_set_code_ff" not in nd.baselines(ctx, "nbody", NB)
    assert "applied_set_code_ff" not in nd.learned(ctx, "nbody", NB)
    assert set(NB.controls) == {"applied_set_code_ff", "applied_set_implicit", "vn_applied_set-dense"}
    assert {v.label for v in vd.NBODY.variants} >= set(NB.controls)  # every control is planned on the bench


def _mechanism(ctx):
    return nd.mechanism_claim("nbody", "vn_applied_set", NB, "mse")(ctx)


def test_mechanism_verdict_is_decided_on_the_splits_the_reading_wins():
    # every control 10x worse on ood_forces (the only OOD win; ood_both is a loss and is not asked)
    table = {**WIN, **{c: {"id": 0.05, "ood_forces": 1.0, "ood_both": 0.01} for c in NB.controls}}
    v = _mechanism(_spread_ctx(table))
    assert v.verdict == "holds, and the mechanism is needed"
    assert "`vn_applied_set` below the best baseline beyond the interval on ood_forces (0.5x [" in v.evidence
    assert "ood_both" not in v.evidence  # a loss: not asked
    assert v.effect == "10x (ood_forces)"
    # one control as good (equal errors): the win is the structure's
    table["vn_applied_set-dense"] = dict(WIN["vn_applied_set"])
    assert _mechanism(_spread_ctx(table)).verdict == "holds only through the structure"
    # a control with fewer seeds than the reading decides nothing (while no other is as good)
    table["vn_applied_set-dense"] = {"id": 0.05, "ood_forces": 1.0}
    ctx = _spread_ctx(table)
    ctx = ReportContext(vd.SPEC, "quick", [e for e in ctx.entries if not (e["model"] == "vn_applied_set-dense"
                                                                           and e["seed"] == 2)], out=".")
    v = _mechanism(ctx)
    assert v.verdict == "undecided" and "`vn_applied_set-dense` not run on the reading's 3 seeds" in v.evidence
    # no OOD win beyond the interval (a mean 2 % below the GNN's with a 10 % seed spread): nothing to credit
    table = {**WIN, "vn_applied_set": {"id": 0.05, "ood_forces": 0.196, "ood_both": 0.5}}
    assert _mechanism(_spread_ctx(table)).verdict == "does not hold"
    assert _mechanism(_spread_ctx({"gnn": WIN["gnn"]})).verdict is None


def _structure(ctx):
    return nd.structure_claim("nbody", ("applied_set_code_ff", "applied_set_implicit"), NB, "mse")(ctx)


def test_the_structure_claim_holds_where_a_control_beats_the_best_baseline_beyond_the_interval():
    # applied_set_code_ff 0.01 against the gnn's 0.20 (ood_forces) and 0.4 (ood_both): wins beyond the interval,
    # the effect the one with the lowest upper bound
    v = _structure(_spread_ctx(WIN))
    assert v.verdict is True and v.reading == "applied_set_code_ff"
    assert v.effect.startswith("0.025x [") and v.effect.endswith("(ood_both, `applied_set_code_ff`)")
    assert "Below the best baseline beyond the interval: `applied_set_code_ff` on ood_forces, ood_both" in v.evidence
    assert "vn_applied_set" not in v.against  # a VN reading is never the baseline
    # the dense VN is not a control without the mechanism: a win of it does not count
    table = {**WIN, "applied_set_code_ff": {"id": 0.05, "ood_forces": 0.3, "ood_both": 0.8},
             "vn_applied_set-dense": {"id": 0.01, "ood_forces": 0.01, "ood_both": 0.01}}
    v = _structure(_spread_ctx(table))
    assert v.verdict is False and "No control below the best baseline" in v.evidence
    assert "Nearest a win: `applied_set_code_ff` ood_forces 1.5x [" in v.evidence
    # a mean 2 % below the best baseline's with a 10 % seed spread is no win
    table["applied_set_code_ff"] = {"id": 0.05, "ood_forces": 0.196, "ood_both": 0.6}
    assert _structure(_spread_ctx(table)).verdict is False
    assert _structure(_spread_ctx({"gnn": WIN["gnn"]})).verdict is None  # no control with records


def test_grid_edges_name_choices_at_an_end_of_a_numeric_axis(tmp_path):
    import json

    from hebbnets.experiments.reporting.sections import grid_edges

    models = {"set_mlp": {"config": {"hidden": 64, "lr": 0.01}},  # lr the largest of (1e-3, 3e-3, 1e-2)
              "gnn": {"config": {"hidden": 128, "lr": 0.003}},  # inside the grid; a 2-value axis is never an edge
              "applied_set_code_ff": {"config": {"l1": 0.0, "lr": 0.001}},  # l1 off is no edge; lr the smallest
              "system_ridge": {"config": {"alpha": 10.0}}}  # the largest of 6 ridge strengths
    (tmp_path / f"{vd.NBODY.configs}.json").write_text(json.dumps({"models": models}))
    ctx = ReportContext(vd.SPEC, "quick", [], out=".", configs_dir=tmp_path)
    assert grid_edges(ctx, "nbody") == ["`system_ridge` alpha 10 (the largest of 6 tried)",
                                        "`set_mlp` lr 0.01 (the largest of 3 tried)",
                                        "`applied_set_code_ff` lr 0.001 (the smallest of 3 tried)"]
    assert "- nbody, chosen at an end of its grid" in "\n".join(nd.cap_note(ctx))
    (tmp_path / f"{vd.NBODY.configs}.json").write_text(json.dumps({"models": {"gnn": models["gnn"]}}))
    assert grid_edges(ctx, "nbody") == [] and "- nbody," not in "\n".join(nd.cap_note(ctx))


def test_the_cut_section_names_the_rows_and_seeds_the_records_lack():
    entries = [_fit(lab, s, {("id", "mse"): 0.1}) for lab in [v.label for v in vd.NBODY.variants] for s in range(5)
               if not (lab == "gnn" and s > 2) and lab != "mlp"]
    text = "\n".join(nd.cuts(ReportContext(vd.SPEC, "quick", entries, out=".")))
    assert "- `nbody`: not run: `mlp`, `gnn` seeds 3, 4." in text
    assert "- `mnist_transform`: not run (no records)." in text
    full = []
    for b in vd.BENCHES:  # every planned row on every seed
        for v in b.variants:
            for seed in range(5):
                full.append(_fit(v.label, seed, {("id", "mse"): 0.1}))
                full[-1]["slots"][0]["bench"] = b.name
    assert "Not run yet" not in "\n".join(nd.cuts(ReportContext(vd.SPEC, "quick", full, out=".")))


def test_nbody_controls_take_vn_applied_sets_chosen_structure():
    """The same-structure controls are searched at the structure ``vn_applied_set``'s search chose
    (atom count; for the implicit control also its FISTA budget, ``beta`` and prediction l1 weight):
    a new choice of ``vn_applied_set`` must move the controls' bases with it."""
    from hebbnets.controls import AppliedSetCodeFFConfig, AppliedSetImplicitConfig
    chosen = ReportContext(vd.SPEC, "quick", [], out=".").configs(vd.NBODY.configs)["models"]["vn_applied_set"]["config"]
    code_ff, implicit = vd.NBODY.tuning["applied_set_code_ff"].base, vd.NBODY.tuning["applied_set_implicit"].base
    assert code_ff.get("atoms", AppliedSetCodeFFConfig().atoms) == chosen["atoms"]
    assert implicit.get("atoms", AppliedSetImplicitConfig().atoms) == chosen["atoms"]
    assert (implicit["max_iter"], implicit["beta"], implicit["lam"]) == \
        (chosen["max_iter"], chosen["beta"], chosen["test_lam"])
