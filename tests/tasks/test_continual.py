"""Continual tasks: stages in order, disjoint in their declared factors, tests per stage and joint."""
import pytest
import torch

import hebbnets as hn
from hebbnets.tasks.continual import concat_splits

SMALL = {"functions1d_continual": dict(length=16, n_train=40, n_test=12),
         "mnist_continual": dict(n_train=40, n_test=12),
         "nbody_continual": dict(n_train=40, n_test=12, substeps=2)}


@pytest.fixture(scope="module", params=sorted(SMALL))
def task(request):
    return hn.tasks.make(request.param, seed=0, **SMALL[request.param])


def test_stages_and_test_splits(task):
    assert list(task.stages) == ["stage1", "stage2"]
    assert {"id", "id_stage1", "id_stage2"} <= set(task.tests)
    assert any(k.startswith("ood_cross") for k in task.tests)
    for split in task.stages.values():
        assert len(split) == SMALL[task.name]["n_train"]
    # train is every stage at once (the joint-training reference), in stage order
    assert torch.equal(task.train.x, torch.cat([s.x for s in task.stages.values()]))
    for split in task.tests.values():
        assert len(split) == SMALL[task.name]["n_test"]


def test_stages_are_disjoint_in_the_declared_factors(task):
    labels = task.info["factor_labels"]
    seen = {s: labels[s].any(0) for s in task.stages}  # (F,) factors present in the stage
    assert not bool((seen["stage1"] & seen["stage2"]).any())
    # each stage's test split holds only that stage's factors (small splits may miss some)
    for stage in ("stage1", "stage2"):
        assert not bool((labels[f"id_{stage}"] & ~seen[stage]).any())
        assert bool((labels["id"] & seen[stage]).any())  # the joint split holds both stages
    cross = next(k for k in task.tests if k.startswith("ood_cross"))
    both = labels[cross][:, seen["stage1"]].any(1) & labels[cross][:, seen["stage2"]].any(1)
    assert bool(both.all())  # every cross sample combines a factor of each stage
    names = task.info["factors"]
    declared = {s: sorted(map(str, f)) for s, f in task.info["stage_factors"].items()}
    assert declared == {s: sorted(str(names[i]) for i in seen[s].nonzero().flatten().tolist()) for s in seen}
    for split in ("stage1", "stage2", "id", "id_stage1"):
        assert len(labels[split]) == (len(task.stages[split]) if split in task.stages else len(task.tests[split]))


def test_functions1d_stage_signals_are_their_combinations():
    task = hn.tasks.make("functions1d_continual", seed=0, **SMALL["functions1d_continual"])
    assert task.info["combos"]["stage1"] == ("sin", "cos", "cos+sin")
    assert task.info["combos"]["ood_cross"] == ("poly+sin", "gauss+sin", "cos+poly", "cos+gauss")
    # the signals are their combinations: at t = 0 a sine is 0 and a cosine its amplitude in [0.5, 1]
    ids, x0 = task.info["combo_ids"]["stage1"], task.stages["stage1"].x[:, 0]
    assert torch.equal(x0[ids == 0], torch.zeros_like(x0[ids == 0]))
    assert bool(((x0[ids == 1] >= 0.5) & (x0[ids == 1] <= 1.0)).all()) and bool((ids == 1).any())
    same = hn.tasks.make("functions1d_continual", seed=0, **SMALL["functions1d_continual"])
    assert torch.equal(same.stages["stage2"].x, task.stages["stage2"].x)
    other = hn.tasks.make("functions1d_continual", seed=1, **SMALL["functions1d_continual"])
    assert not torch.equal(other.stages["stage1"].x, task.stages["stage1"].x)
    masked = hn.tasks.make("functions1d_continual", seed=0, mode="masked", **SMALL["functions1d_continual"])
    assert masked.metric == "mse_missing" and masked.stages["stage1"].x_mask is not None


def test_mnist_stage_digits_and_pools():
    task = hn.tasks.make("mnist_continual", seed=0, **SMALL["mnist_continual"])
    assert set(task.info["labels"]["stage1"].flatten().tolist()) <= {0, 1, 2, 3, 4}
    assert set(task.info["labels"]["stage2"].flatten().tolist()) <= {5, 6, 7, 8, 9}
    train_images = set(task.info["index"]["train"].flatten().tolist())
    for key in ("id", "id_stage1", "id_stage2", "ood_cross_add"):
        assert not train_images & set(task.info["index"][key].flatten().tolist())  # no test image is trained


def test_nbody_stages_are_pairs_of_laws_in_nbody_units():
    from hebbnets.tasks.nbody import delta_scale

    task = hn.tasks.make("nbody_continual", seed=0, **SMALL["nbody_continual"])
    labels = task.info["factor_labels"]
    gravity, drag, lorentz, spring = range(4)
    # stage 1: gravity alone, drag alone, or both; never a stage-2 law
    assert not bool(labels["stage1"][:, [lorentz, spring]].any())
    assert bool(labels["stage1"][:, [gravity, drag]].any(1).all())
    assert bool((labels["ood_cross"].sum(1) == 2).all())
    # shapes of nbody; the target units are those of the first stage's systems
    ref = hn.tasks.make("nbody", seed=0, n_train=8, n_test=4, substeps=2)
    assert task.stages["stage1"].x.shape[1:] == ref.train.x.shape[1:] and task.metric == "mse"
    gen = torch.Generator().manual_seed(0)
    _, raw, scale = hn.tasks.nbody.simulate_split(40, [("gravity",), ("drag",), ("gravity", "drag")], (3, 4, 5),
                                                  task.params, gen)
    torch.testing.assert_close(scale, delta_scale(raw, task.params))
    torch.testing.assert_close(task.info["target_scale"], scale.float())
    torch.testing.assert_close(task.stages["stage1"].x, hn.tasks.nbody.simulate_split(
        40, [("gravity",), ("drag",), ("gravity", "drag")], (3, 4, 5), task.params, torch.Generator().manual_seed(0))[0].x)


@pytest.mark.parametrize("name, params, word", [
    ("functions1d_continual", dict(stage_combos=[["sin", "poly"], ["sin+gauss"]]), "stage_combos"),
    ("functions1d_continual", dict(stage_combos=[["sin"]]), "stage_combos"),
    ("functions1d_continual", dict(cross_combos=["sin"]), "ood_pairs"),
    ("functions1d_continual", dict(stage_comb=[]), "stage_comb"),
    ("mnist_continual", dict(stage_digits=[[0, 1], [1, 2]]), "stage_digits"),
    ("mnist_continual", dict(stage_digits=[[0, 10], [1]]), "stage_digits"),
    ("mnist_continual", dict(n_train=0), "n_train"),
    ("nbody_continual", dict(stage_laws=[["gravity"], ["gravity", "spring"]]), "stage_laws"),
    ("nbody_continual", dict(stage_laws=[["gravity"], ["magnetism"]]), "stage_laws"),
    ("nbody_continual", dict(window=1), "window"),
    ("nbody_continual", dict(drag=0.0), "drag"),
    ("nbody_continual", dict(n_min=5, n_max=3), "n_min"),
    ("nbody_continual", dict(n_fewer=2), "params"),
])
def test_bad_parameters_name_the_argument(name, params, word):
    with pytest.raises(ValueError, match=word):
        hn.tasks.make(name, **params)


def test_concat_splits_keeps_masks_only_when_all_have_them():
    a = hn.Split(torch.ones(2, 3), torch.ones(2, 3), x_mask=torch.ones(2, 3))
    b = hn.Split(torch.zeros(1, 3), torch.zeros(1, 3), x_mask=torch.zeros(1, 3))
    both = concat_splits([a, b])
    assert both.x.shape == (3, 3) and torch.equal(both.x_mask[2], torch.zeros(3))
    assert concat_splits([a, hn.Split(torch.zeros(1, 3), torch.zeros(1, 3))]).x_mask is None
