"""Continual-learning versions of the VN benchmarks: the same data, learned in stages whose
factors are disjoint.

A continual task is an ordinary ``Task`` with ``stages``: training splits learned in order (the
first with ``fit``, every later one with ``partial_fit``; ``hebbnets.continual.fit_stages``).
Its test splits score each stage's own data (``id_<stage>``), all stages together (``id``,
also the distribution of ``train``, which holds every stage at once: joint training is the
reference without forgetting), and combinations across stages (``ood_cross...``), which only
a model that kept the first stage's factors can compose with the second's. ``info`` declares the
factors: ``factors`` (their names), ``stage_factors`` (per stage) and ``factor_labels``
(``{split: (N, F) bool}``, which factors each sample contains), the input of the atom-reuse
measures in ``hebbnets.entanglement``.

* ``functions1d_continual``: first the sums built from {sin, cos} (``sin``, ``cos``,
  ``sin+cos``), then those from {poly, gauss}; ``ood_cross`` = the four sums of one family of
  each stage. The signals come from ``functions1d`` (every generator parameter passes through).
* ``mnist_continual``: reconstruct the real digits 0-4, then 5-9 (``mnist_comp``'s digits and
  train / test image pools); ``ood_cross_add`` = ``clip(a + b, 0, 1)`` of a test digit of the
  first stage and one of the second.
* ``nbody_continual``: ``nbody``'s next-step prediction, first under one pair of force laws
  (each alone and both together), then under the other pair; ``ood_cross`` = one law of each
  stage together. Body counts ``[n_min, n_max]`` everywhere; the target units (``delta_scale``)
  come from the first stage's training systems.

Every continual task loads the configurations chosen for it (``configs/<task>[-<mode>].json``,
tuned on validation data carved from its *first* stage only: ``hebbnets.tasks.validation_split``).
"""
from __future__ import annotations

from typing import Any

import torch

from .._split import Split
from . import _configs
from . import functions1d as f1d
from . import mnist_comp, nbody
from ._nbody_sim import LAWS
from ._task import Task, check_params, register_task


def concat_splits(splits: list[Split]) -> Split:
    """The samples of ``splits`` one after the other (masks kept when every split has one)."""
    def cat(ts):
        return None if any(t is None for t in ts) else torch.cat(ts)

    return Split(torch.cat([s.x for s in splits]), torch.cat([s.y for s in splits]),
                 cat([s.x_mask for s in splits]), cat([s.y_mask for s in splits]), splits[0].metric)


def _sub_seed(seed: int, k: int) -> int:
    """Distinct generator seeds for the parts (stages, joint tests) of one continual task."""
    return 16 * seed + k


def _check_disjoint(stage_factors: list[set], name: str) -> None:
    for i in range(len(stage_factors)):
        for j in range(i + 1, len(stage_factors)):
            shared = sorted(map(str, stage_factors[i] & stage_factors[j]))
            if shared:
                raise ValueError(f"{name}: stages {i + 1} and {j + 1} share factor(s) {shared}; stages must be disjoint")


def _stage_list(value: Any, name: str) -> list[tuple]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or len(value) < 2:
        raise ValueError(f"{name}: expected a list of at least two stages (each a list), got {value!r}")
    out = []
    for stage in value:
        if isinstance(stage, str) or not isinstance(stage, (list, tuple)) or len(stage) == 0:
            raise ValueError(f"{name}: every stage must be a non-empty list, got {stage!r}")
        out.append(tuple(stage))
    return out


# --- functions1d ------------------------------------------------------------------------------------
def combo_families(combo: str) -> set[str]:
    """The families a ``functions1d`` combination contains (outer and inner): ``"sin(poly)" ->
    {"sin", "poly"}``."""
    return {fam for term in f1d.parse_combo(combo) for fam in term if fam is not None}


def _family_labels(combos: tuple[str, ...], ids: torch.Tensor) -> torch.Tensor:
    """``(N, 4)`` bool: which of ``FAMILIES`` each sample's combination contains."""
    table = torch.tensor([[fam in combo_families(c) for fam in f1d.FAMILIES] for c in combos])  # (C, 4)
    return table[ids]


_F1D_STAGES = (("sin", "cos", "sin+cos"), ("poly", "gauss", "poly+gauss"))
_F1D_CROSS = ("sin+poly", "sin+gauss", "cos+poly", "cos+gauss")
_F1D_OWN = dict(stage_combos=_F1D_STAGES, cross_combos=_F1D_CROSS)
# every generator parameter of functions1d except its split definitions and sizes
_F1D_PASSED = {s: {k: v for k, v in f1d._DEFAULTS[s].items() if k not in f1d._SPLITS and k not in ("n_train", "n_test")}
               for s in f1d._DEFAULTS}
_F1D_DEFAULTS = {
    "quick": dict(n_train=1000, n_test=300, **_F1D_OWN, **_F1D_PASSED["quick"]),
    "paper": dict(n_train=10000, n_test=2000, **_F1D_OWN, **_F1D_PASSED["paper"]),
}


@register_task("functions1d_continual")
def make_functions1d_continual(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Build the task (module docstring). Parameters: ``stage_combos`` (a list of stages, each a
    list of ``functions1d`` combination strings; the families of different stages must be
    disjoint), ``cross_combos`` (combinations across stages for ``ood_cross``; empty drops it),
    ``n_train`` (per stage), ``n_test`` (per test split), and every other ``functions1d``
    parameter (``mode``, ``length``, ``noise``, ...).
    """
    p = check_params(params, _F1D_DEFAULTS[scale], "functions1d_continual")
    stages = [tuple(dict.fromkeys(f1d.canonical(c, "stage_combos") for c in stage))
              for stage in _stage_list(p["stage_combos"], "stage_combos")]
    factors = [set().union(*(combo_families(c) for c in stage)) for stage in stages]
    _check_disjoint(factors, "stage_combos")
    base = {k: p[k] for k in _F1D_PASSED[scale]}
    no_ood = dict(ood_pairs=[], ood_triples=[], ood_nested=[])
    parts = [f1d.make_functions1d(seed=_sub_seed(seed, k), scale=scale, train_combos=list(stage), n_train=p["n_train"],
                                  n_test=p["n_test"], **base, **no_ood) for k, stage in enumerate(stages)]
    everything = tuple(c for stage in stages for c in stage)
    # joint test splits: all stages (id) and combinations across them (cross); its train split is unused
    cross = list(p["cross_combos"])
    joint = f1d.make_functions1d(seed=_sub_seed(seed, len(stages)), scale=scale, train_combos=list(everything),
                                 n_train=1, n_test=p["n_test"], **base, **{**no_ood, "ood_pairs": cross})
    names = [f"stage{k + 1}" for k in range(len(stages))]
    combos = {"train": everything, "id": everything}
    ids = {"id": joint.info["combo_ids"]["id"]}
    tests = {"id": joint.tests["id"]}
    for name, stage, part in zip(names, stages, parts):
        combos[name] = combos[f"id_{name}"] = stage
        ids[name] = part.info["combo_ids"]["train"]
        ids[f"id_{name}"] = part.info["combo_ids"]["id"]
        tests[f"id_{name}"] = part.tests["id"]
    ids["train"] = torch.cat([ids[n] + sum(len(s) for s in stages[:k]) for k, n in enumerate(names)])
    if cross:
        combos["ood_cross"] = tuple(joint.params["ood_pairs"])
        ids["ood_cross"] = joint.info["combo_ids"]["ood_pairs"]
        tests["ood_cross"] = joint.tests["ood_pairs"]
    stage_splits = {name: part.train for name, part in zip(names, parts)}
    params_out = {"seed": seed, "scale": scale, **p, "stage_combos": [list(s) for s in stages], "cross_combos": list(combos.get("ood_cross", ()))}
    return Task(
        name="functions1d_continual",
        train=concat_splits(list(stage_splits.values())),
        tests=tests,
        metric=parts[0].metric,
        params=params_out,
        stages=stage_splits,
        model_configs=_configs.chosen(f"functions1d_continual-{p['mode']}"),
        info={"t": joint.info["t"], "factors": f1d.FAMILIES,
              "stage_factors": {n: sorted(f) for n, f in zip(names, factors)},
              "combos": combos, "combo_ids": ids,
              "factor_labels": {k: _family_labels(combos[k], v) for k, v in ids.items()}},
    )


# --- mnist_comp ------------------------------------------------------------------------------------
_MNIST_OWN = dict(stage_digits=((0, 1, 2, 3, 4), (5, 6, 7, 8, 9)), test_fraction=0.2)
_MNIST_DEFAULTS = {
    "quick": dict(n_train=1500, n_test=250, **_MNIST_OWN),
    "paper": dict(n_train=10000, n_test=1000, **_MNIST_OWN),
}


@register_task("mnist_continual")
def make_mnist_continual(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Build the task (module docstring). Parameters: ``stage_digits`` (a list of stages, each a
    list of digit classes 0-9, disjoint), ``n_train`` (per stage; drawn without replacement
    while the stage's pool allows), ``n_test`` (per test split), ``test_fraction`` (share of the
    5,000 images held out as the test pool, split as in ``mnist_comp``)."""
    p = check_params(params, _MNIST_DEFAULTS[scale], "mnist_continual")
    stages = _stage_list(p["stage_digits"], "stage_digits")
    for stage in stages:
        if any(isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= 9 for d in stage):
            raise ValueError(f"stage_digits: digits must be ints in 0-9, got {list(stage)!r}")
    _check_disjoint([set(s) for s in stages], "stage_digits")
    for key in ("n_train", "n_test"):
        if isinstance(p[key], bool) or not isinstance(p[key], int) or p[key] < 1:
            raise ValueError(f"{key}: expected an int >= 1, got {p[key]!r}")
    if not 0 < p["test_fraction"] < 1:
        raise ValueError(f"test_fraction: must be in (0, 1), got {p['test_fraction']!r}")
    images, labels = mnist_comp.load_digits()
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(images), generator=gen)
    n_test_pool = round(p["test_fraction"] * len(images))
    test_pool, train_pool = perm[:n_test_pool], perm[n_test_pool:]

    def pool_of(pool: torch.Tensor, digits) -> torch.Tensor:
        return pool[torch.isin(labels[pool], torch.tensor(list(digits)))]

    def draw(pool: torch.Tensor, n: int) -> torch.Tensor:
        if n <= len(pool):
            return pool[torch.randperm(len(pool), generator=gen)[:n]]
        return pool[torch.randint(len(pool), (n,), generator=gen)]

    def one_hot(index: torch.Tensor) -> torch.Tensor:  # (N, k) image indices -> (N, 10) bool
        return torch.nn.functional.one_hot(labels[index], 10).amax(1).bool()

    names = [f"stage{k + 1}" for k in range(len(stages))]
    index: dict[str, torch.Tensor] = {}
    stage_splits, tests = {}, {}
    for name, digits in zip(names, stages):
        index[name] = draw(pool_of(train_pool, digits), p["n_train"])[:, None]
        stage_splits[name] = Split(images[index[name][:, 0]], images[index[name][:, 0]])
    everything = [d for s in stages for d in s]
    index["id"] = draw(pool_of(test_pool, everything), p["n_test"])[:, None]
    for name, digits in zip(names, stages):
        index[f"id_{name}"] = draw(pool_of(test_pool, digits), p["n_test"])[:, None]
    # a first-stage digit plus a second-stage digit
    index["ood_cross_add"] = torch.stack([draw(pool_of(test_pool, stages[0]), p["n_test"]),
                                          draw(pool_of(test_pool, stages[1]), p["n_test"])], 1)
    for key, idx in index.items():
        if key in stage_splits:
            continue
        img = images[idx].sum(1).clamp(0, 1)  # (N, 28, 28)
        tests[key] = Split(img, img)
    index["train"] = torch.cat([index[n] for n in names])
    return Task(
        name="mnist_continual",
        train=concat_splits(list(stage_splits.values())),
        tests=tests,
        metric="mse",
        params={"seed": seed, "scale": scale, **p, "stage_digits": [list(s) for s in stages]},
        stages=stage_splits,
        model_configs=_configs.chosen("mnist_continual"),
        info={"factors": tuple(range(10)), "stage_factors": {n: sorted(s) for n, s in zip(names, stages)},
              "index": index, "labels": {k: labels[v] for k, v in index.items()},
              "factor_labels": {k: one_hot(v) for k, v in index.items()},
              "train_pool": train_pool, "test_pool": test_pool},
    )


# --- nbody -------------------------------------------------------------------------------------------
# every nbody parameter except its split definitions and sizes
_NB_PASSED = {s: {k: v for k, v in nbody.DEFAULTS[s].items() if k not in ("n_train", "n_test", "n_fewer", "fewer_laws")}
              for s in nbody.DEFAULTS}
_NB_OWN = dict(stage_laws=(("gravity", "drag"), ("lorentz", "spring")))
_NB_DEFAULTS = {
    "quick": dict(n_train=2000, n_test=400, **_NB_OWN, **_NB_PASSED["quick"]),
    "paper": dict(n_train=10000, n_test=2000, **_NB_OWN, **_NB_PASSED["paper"]),
}


@register_task("nbody_continual")
def make_nbody_continual(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Build the task (module docstring). Parameters: ``stage_laws`` (a list of stages, each a
    list of force laws from ``gravity``, ``drag``, ``lorentz``, ``spring``, disjoint; a stage
    trains on each of its laws alone and on all of them together), ``n_train`` (per stage),
    ``n_test`` (per test split), and every ``nbody`` parameter but ``n_fewer`` / ``fewer_laws``
    (``window``, ``n_min``, ``n_max``, ``dt``, the law strengths, ...)."""
    p = check_params(params, _NB_DEFAULTS[scale], "nbody_continual")
    stages = _stage_list(p["stage_laws"], "stage_laws")
    for stage in stages:
        if any(law not in LAWS for law in stage) or len(set(stage)) != len(stage):
            raise ValueError(f"stage_laws: expected distinct laws from {list(LAWS)} per stage, got {list(stage)!r}")
    _check_disjoint([set(s) for s in stages], "stage_laws")
    nbody.check_simulation_params(p)
    gen = torch.Generator().manual_seed(seed)
    bodies = tuple(range(int(p["n_min"]), int(p["n_max"]) + 1))
    law_sets = [[(law,) for law in stage] + ([tuple(stage)] if len(stage) > 1 else []) for stage in stages]
    names = [f"stage{k + 1}" for k in range(len(stages))]
    stage_splits, raw, tests = {}, {}, {}
    scale_ = None
    for name, sets in zip(names, law_sets):  # the first stage's systems fix the target units
        stage_splits[name], raw[name], scale_ = nbody.simulate_split(p["n_train"], sets, bodies, p, gen, scale_)
    everything = [s for sets in law_sets for s in sets]
    cross = [(a, b) for a in stages[0] for b in stages[1]]
    for key, sets in [("id", everything), *[(f"id_{n}", s) for n, s in zip(names, law_sets)], ("ood_cross", cross)]:
        tests[key], raw[key], _ = nbody.simulate_split(p["n_test"], sets, bodies, p, gen, scale_)
    raw["train"] = {"active": torch.cat([raw[n]["active"] for n in names])}
    return Task(
        name="nbody_continual",
        train=concat_splits(list(stage_splits.values())),
        tests=tests,
        metric="mse",
        params={"seed": seed, "scale": scale, **p, "stage_laws": [list(s) for s in stages]},
        stages=stage_splits,
        model_configs=_configs.chosen("nbody_continual"),
        info={"features": nbody.FEATURES, "laws": LAWS, "factors": LAWS, "target_scale": scale_.float(),
              "stage_factors": {n: sorted(s) for n, s in zip(names, stages)},
              "law_sets": {"cross": [list(c) for c in cross], **{n: [list(s) for s in sets] for n, sets in zip(names, law_sets)}},
              "factor_labels": {k: d["active"] for k, d in raw.items()},
              "n_bodies": {k: d["n_bodies"] for k, d in raw.items() if "n_bodies" in d}},
    )


__all__ = ["combo_families", "concat_splits", "make_functions1d_continual", "make_mnist_continual", "make_nbody_continual"]
