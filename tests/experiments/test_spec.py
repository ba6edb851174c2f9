import pytest

from hebbnets.experiments import Bench, Grid, Measure, Moves, Scale, Spec, Text, Variant, get_spec, variant


def test_bench_models_are_names_or_variants_and_scales_resolve():
    b = Bench("b", task="toy_atoms", models=("vn", variant("mlp-big", "mlp", hidden=(64,))), seeds=(0, 1, 2),
              params={"n_train": 100}, scales={"smoke": Scale(params={"n_train": 10}, config={"*": {"epochs": 1}})})
    assert [v.label for v in b.variants] == ["vn", "mlp-big"] and b.variant("mlp-big").config == {"hidden": (64,)}
    smoke, quick, paper = b.at("smoke"), b.at("quick"), b.at("paper")
    assert smoke.params == {"n_train": 10} and smoke.seeds == (0,) and smoke.task_scale == "quick"
    assert quick.params == {"n_train": 100} and quick.seeds == (0, 1, 2) and dict(quick.config) == {}
    assert paper.task_scale == "paper"
    assert b.configs == "toy_atoms" and Bench("c", "spatial2d", ("vn",), params={"mode": "decode"}).configs == "spatial2d-decode"
    with pytest.raises(ValueError, match="scale"):
        b.at("huge")
    with pytest.raises(ValueError, match="label"):
        b.variant("nope")


@pytest.mark.parametrize("kwargs, needle", [
    (dict(models=()), "models"),
    (dict(models=("vn", "vn")), "repeats the label"),
    (dict(seeds=(0, 0)), "seeds"),
    (dict(seeds=()), "seeds"),
    (dict(name="bad name"), "name"),
    (dict(tuning={"cnn": Grid({"lr": [1]})}), "not among the models"),
    (dict(tuning={"vn": {"lam": [1]}}), "Grid or Moves"),
    (dict(tuning={"vn": Grid({"lam": [1, 2]}), "mlp": Grid({"lr": [1, 2, 3]})}), "unequal numbers"),
    # a model kept from earlier rounds counts its points in the equal-effort check
    (dict(tuning={"vn": Grid({"lam": [1, 2]})}, kept={"mlp": 3}), "unequal numbers"),
    (dict(kept={"cnn": 3}), "kept: 'cnn' must be a model"),
    (dict(tuning={"mlp": Grid({"lr": [1, 2]})}, kept={"mlp": 2}), "without a tuning search"),
    (dict(kept={"mlp": 0}), "positive number"),
    (dict(scales={"huge": Scale()}), "scales"),
    (dict(data_seed=-1), "data_seed"),
])
def test_bench_refuses_bad_definitions(kwargs, needle):
    args = dict(name="b", task="toy_atoms", models=("vn", "mlp"))
    args.update(kwargs)
    with pytest.raises(ValueError, match=needle):
        Bench(**args)


def test_equal_tuning_effort_counts_grid_points_and_moves_alike():
    grid = Grid({"lam": [0.01, 0.03], ("rho_s", "rho_u"): [1.0, 2.0, 4.0]}, base={"epochs": 3})
    moves = Moves(({"lam": 0.1}, {"topk": 4}, {"nonneg": True}, {"epochs": 5}, {"tol": 1e-3}), base={"epochs": 3})
    assert grid.n_points == moves.n_points == 6
    Bench("b", "toy_atoms", ("vn", "mlp"), tuning={"vn": moves, "mlp": Grid({"lr": [1, 2, 3], "hidden": [(8,), (16,)]})})
    points = grid.points()
    assert len(points) == 6 and points[1] == {"lam": 0.01, "rho_s": 2.0, "rho_u": 2.0}
    with pytest.raises(ValueError, match="grid"):
        Grid({"lam": []})
    with pytest.raises(ValueError, match="moves"):
        Moves(())


def test_spec_checks_names_and_sections():
    b = Bench("b", "toy_atoms", ("vn",))
    with pytest.raises(ValueError, match="repeats"):
        Spec("s", "t", benches=(b, b))
    with pytest.raises(ValueError, match="no bench"):
        Spec("s", "t")
    with pytest.raises(ValueError, match="sections"):
        Spec("s", "t", benches=(b,), sections=("text",))
    s = Spec("s", "t", benches=(b,), measures=(Measure("m", "vn_inference", {"sizes": [[8, 4, 4]]},
                                                        scales={"smoke": {"lam": 0.5}}),), sections=(Text("x"),))
    assert s.bench("b") is b and s.measure("m").at("smoke") == {"sizes": [[8, 4, 4]], "lam": 0.5}
    with pytest.raises(ValueError, match="bench"):
        s.bench("nope")
    with pytest.raises(ValueError, match="unknown spec"):
        get_spec("nope")
    assert isinstance(Variant("a", "vn").config, type(b.params))


def test_kept_models_count_beside_the_searches():
    b = Bench("b", "toy_atoms", models=("vn", "mlp"), tuning={"vn": Grid({"lam": [1, 2, 3]})}, kept={"mlp": 3})
    assert dict(b.kept) == {"mlp": 3} and set(b.tuning) == {"vn"}
