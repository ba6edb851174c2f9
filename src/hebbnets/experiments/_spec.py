"""Experiment specs as data: ``Spec`` (one report) holds ``Bench``es (fits of models on a task)
and ``Measure``s (speed measurements), plus the report's sections.

A bench is everything needed to reproduce one table::

    Bench("functions1d_masked", task="functions1d", params={"mode": "masked"},
          models=("vn", "transformer", "mamba", "mlp"),          # one name per line to add a model
          seeds=(0, 1, 2), protocol="fit",
          tuning={"vn": Grid({"lam": [0.003, 0.01]}, base=...), "mlp": Grid({"lr": [1e-3, 3e-3]}, base=...)},
          scales={"smoke": Scale(params={"n_train": 64}, config={"*": {"epochs": 1}})})

Each model runs with the configuration chosen for the task on validation data (the task's
configs file, ``hebbnets/tasks/configs``), overridden by its ``Variant`` config (a model entry
may be a plain name or ``Variant(label, model, **config)``, e.g. an ablation), then by the
scale's overrides. A model given as a plain name is its own label.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

#: scales every spec runs at: ``smoke`` (tiny sizes, one seed: checks the spec end to end in
#: minutes), ``quick`` (the committed reports), ``paper`` (the papers' sizes; a cluster's job)
SCALES = ("smoke", "quick", "paper")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_.=+-]*$")


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


def _check_name(value: Any, what: str, pattern: re.Pattern = _NAME) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        chars = "'_', '-', '.', '=', '+'" if pattern is _LABEL else "'_', '-', '.'"
        raise ValueError(f"{what}: expected a name of letters, digits and {chars}, got {value!r}")
    return value


@dataclass(frozen=True)
class Variant:
    """One model row of a bench: ``label`` (its name in tables and records), the registered
    ``model``, ``config`` overrides over the task's chosen configuration, and ``options``: protocol
    options of this row over the bench's (e.g. a continual row trained jointly on every stage)."""

    label: str
    model: str
    config: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_name(self.label, "label", _LABEL)
        _check_name(self.model, "model")
        object.__setattr__(self, "config", _frozen(self.config))
        object.__setattr__(self, "options", _frozen(self.options))


def variant(label: str, model: str | None = None, *, options: Mapping[str, Any] | None = None, **config: Any) -> Variant:
    """``variant("pool-e5", "rsgn", epochs=5, pool_sigma=1.0)``; ``model`` defaults to ``label``;
    ``options``: the row's protocol options over the bench's (``variant("mlp-joint", "mlp",
    options={"schedule": "joint"})``)."""
    return Variant(label, model or label, config, dict(options or {}))


@dataclass(frozen=True)
class Scale:
    """How a bench differs at one scale.

    Attributes:
        params: task parameters over the bench's ``params``.
        seeds: the seeds at this scale (default: the bench's).
        config: ``{model name: {field: value}}`` over every variant's config; the key ``"*"``
            applies to every model whose config has that field (e.g. ``{"*": {"epochs": 1}}``).
        task_scale: the task generator's own ``scale`` argument (``"quick"`` or ``"paper"``).
    """

    params: Mapping[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] | None = None
    config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    task_scale: str = "quick"

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", _frozen(self.params))
        object.__setattr__(self, "config", _frozen({k: _frozen(v) for k, v in dict(self.config).items()}))
        if self.seeds is not None:
            object.__setattr__(self, "seeds", check_seeds(self.seeds))
        if self.task_scale not in ("quick", "paper"):
            raise ValueError(f"task_scale: expected 'quick' or 'paper', got {self.task_scale!r}")


#: defaults when a bench names no override for a scale
DEFAULT_SCALES = {"smoke": Scale(config={"*": {"epochs": 1}}), "quick": Scale(), "paper": Scale(task_scale="paper")}


@dataclass(frozen=True)
class Grid:
    """A tuning grid: every point of the Cartesian product of ``axes``, each over ``base``
    (the point's config = model defaults, then ``base``, then the point). An axis keyed by a
    tuple of fields sets all of them to each value (tied fields, e.g. ``("rho_s", "rho_u")``)."""

    axes: Mapping[str, tuple[Any, ...]]
    base: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        axes = {}
        for key, values in dict(self.axes).items():
            if not isinstance(values, (list, tuple)) or not values:
                raise ValueError(f"grid: values of {key!r} must be a non-empty list, got {values!r}")
            axes[key] = tuple(values)
        object.__setattr__(self, "axes", _frozen(axes))
        object.__setattr__(self, "base", _frozen(self.base))

    @property
    def n_points(self) -> int:
        n = 1
        for values in self.axes.values():
            n *= len(values)
        return n

    def points(self) -> list[dict[str, Any]]:
        keys = list(self.axes)
        out = []
        for combo in itertools.product(*(self.axes[k] for k in keys)):
            point: dict[str, Any] = {}
            for key, value in zip(keys, combo):
                for name in (key if isinstance(key, tuple) else (key,)):
                    point[name] = value
            out.append(point)
        return out


@dataclass(frozen=True)
class Moves:
    """A successive (greedy coordinate) search: ``base`` first, then each move (a config patch)
    applied to the best configuration so far, kept when it lowers the validation error."""

    moves: tuple[Mapping[str, Any], ...]
    base: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.moves:
            raise ValueError("moves: need at least one move")
        object.__setattr__(self, "moves", tuple(_frozen(m) for m in self.moves))
        object.__setattr__(self, "base", _frozen(self.base))

    @property
    def n_points(self) -> int:
        return 1 + len(self.moves)


def check_seeds(seeds: Any) -> tuple[int, ...]:
    """A non-empty tuple of distinct non-negative ints, or ``ValueError`` naming ``seeds``."""
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise ValueError(f"seeds: expected a list of non-negative ints, got {seeds!r}")
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("seeds: need at least one seed")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise ValueError(f"seeds: expected non-negative ints, got {s!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds: contains duplicates {list(seeds)}")
    return seeds


@dataclass(frozen=True)
class Resolved:
    """A bench at one scale: what the planner needs."""

    params: dict[str, Any]
    seeds: tuple[int, ...]
    config: Mapping[str, Mapping[str, Any]]
    task_scale: str


@dataclass(frozen=True)
class Bench:
    """Models x seeds on one task under one protocol (see the module docstring).

    Attributes:
        name: unique within its spec; names the bench in records, tables and ``--benches``.
        task: a registered task name; ``params`` its generator parameters.
        models: model names and/or ``Variant``s; labels must be unique.
        seeds: model seeds; the task's data is generated with the same seed unless
            ``data_seed`` fixes it (e.g. the RSGN author's data, which has one draw).
        protocol: a registered protocol (``register_protocol``); ``options`` are passed to it
            and are part of every record's key.
        tuning: ``{model name | variant label: Grid | Moves}``, validation points on data carved
            from the training split (``stage tune``); every tuned model gets the same number of
            points. A model name tunes every variant of that model; a variant label (whose label
            differs from its model, e.g. a stacked architecture beside the single layer) tunes
            that variant on its own: its choice is kept under the label in the configs file and
            it starts from it (``tuned_config_key``).
        kept: ``{model name: validation points}`` for models this bench does not re-tune: their
            configs file entries were chosen in earlier rounds and hold that many points. They
            count in the equal-effort check beside ``tuning`` and ``stage tune`` leaves them alone.
        scales: ``{"smoke" | "quick" | "paper": Scale}`` overrides (defaults: ``DEFAULT_SCALES``).
        configs: the task configs file these models start from and ``tune`` writes (default
            ``TASK`` or ``TASK-MODE`` when ``params`` has a ``mode``).
        title: a heading for report sections (default: the name).
    """

    name: str
    task: str
    models: tuple[str | Variant, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0, 1, 2)
    protocol: str = "fit"
    options: Mapping[str, Any] = field(default_factory=dict)
    tuning: Mapping[str, Grid | Moves] = field(default_factory=dict)
    kept: Mapping[str, int] = field(default_factory=dict)
    data_seed: int | None = None
    scales: Mapping[str, Scale] = field(default_factory=dict)
    configs: str | None = None
    title: str = ""

    def __post_init__(self) -> None:
        _check_name(self.name, "name")
        _check_name(self.task, "task")
        if isinstance(self.models, (str, Variant)):
            object.__setattr__(self, "models", (self.models,))
        variants = tuple(m if isinstance(m, Variant) else variant(m) for m in self.models)
        if not variants:
            raise ValueError(f"models: bench {self.name!r} needs at least one model")
        labels = [v.label for v in variants]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"models: bench {self.name!r} repeats the label(s) {dup}")
        object.__setattr__(self, "models", variants)
        object.__setattr__(self, "seeds", check_seeds(self.seeds))
        object.__setattr__(self, "params", _frozen(self.params))
        object.__setattr__(self, "options", _frozen(self.options))
        names = {v.model for v in variants} | {v.label for v in variants}
        for model, search in dict(self.tuning).items():
            if not isinstance(search, (Grid, Moves)):
                raise ValueError(f"tuning: {model!r} needs a Grid or Moves, got {type(search).__name__}")
            if model not in names:
                raise ValueError(f"tuning: model {model!r} is not among the models (or labels) of bench {self.name!r}")
        for model, n in dict(self.kept).items():
            if model not in names or model in self.tuning:
                raise ValueError(f"kept: {model!r} must be a model of bench {self.name!r} without a tuning search")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"kept: {model!r} needs a positive number of validation points, got {n!r}")
        counts = {**{m: s.n_points for m, s in dict(self.tuning).items()}, **dict(self.kept)}
        if len(set(counts.values())) > 1:
            raise ValueError(f"tuning: bench {self.name!r} gives models unequal numbers of validation points "
                             f"{counts}; equal tuning effort needs the same count for every model")
        object.__setattr__(self, "tuning", _frozen(self.tuning))
        object.__setattr__(self, "kept", _frozen(self.kept))
        unknown = sorted(set(self.scales) - set(SCALES))
        if unknown:
            raise ValueError(f"scales: unknown scale(s) {unknown}; expected names from {list(SCALES)}")
        for s in dict(self.scales).values():
            if not isinstance(s, Scale):
                raise ValueError(f"scales: expected Scale values, got {type(s).__name__}")
        object.__setattr__(self, "scales", _frozen(self.scales))
        if self.data_seed is not None and (isinstance(self.data_seed, bool) or not isinstance(self.data_seed, int)
                                           or self.data_seed < 0):
            raise ValueError(f"data_seed: expected None or a non-negative int, got {self.data_seed!r}")
        if self.configs is None:
            mode = self.params.get("mode")
            object.__setattr__(self, "configs", f"{self.task}-{mode}" if mode else self.task)

    @property
    def variants(self) -> tuple[Variant, ...]:
        return self.models  # type: ignore[return-value]

    def variant(self, label: str) -> Variant:
        for v in self.variants:
            if v.label == label:
                return v
        raise ValueError(f"label: bench {self.name!r} has no model labelled {label!r}")

    def tuned_model(self, key: str) -> str:
        """The registered model a ``tuning`` key trains (a variant label names its variant's model)."""
        for v in self.variants:
            if v.label == key:
                return v.model
        return key

    def tuned_config_key(self, v: Variant) -> str:
        """Where variant ``v``'s chosen configuration lives in the configs file: under its label
        when the bench tunes that label on its own, else under its model's name."""
        return v.label if v.label != v.model and v.label in self.tuning else v.model

    def at(self, scale: str) -> Resolved:
        """The bench's parameters, seeds and config overrides at ``scale``."""
        if scale not in SCALES:
            raise ValueError(f"scale: unknown {scale!r}; expected one of {list(SCALES)}")
        s = self.scales.get(scale, DEFAULT_SCALES[scale])
        seeds = s.seeds if s.seeds is not None else (self.seeds[:1] if scale == "smoke" else self.seeds)
        return Resolved({**self.params, **s.params}, seeds, s.config, s.task_scale)

    def with_(self, **changes: Any) -> "Bench":
        """A copy with fields replaced (e.g. another model list)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Measure:
    """A measurement that is not a fit (speed, scaling): ``function`` names a registered
    measurement (``hebbnets.measures.speed.register_measurement``) called with ``params``, over
    which ``scales[scale]`` is applied. It returns a list of row dicts."""

    name: str
    function: str
    params: Mapping[str, Any] = field(default_factory=dict)
    scales: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    title: str = ""

    def __post_init__(self) -> None:
        _check_name(self.name, "name")
        object.__setattr__(self, "params", _frozen(self.params))
        unknown = sorted(set(self.scales) - set(SCALES))
        if unknown:
            raise ValueError(f"scales: unknown scale(s) {unknown}; expected names from {list(SCALES)}")
        object.__setattr__(self, "scales", _frozen({k: _frozen(v) for k, v in dict(self.scales).items()}))

    def at(self, scale: str) -> dict[str, Any]:
        if scale not in SCALES:
            raise ValueError(f"scale: unknown {scale!r}; expected one of {list(SCALES)}")
        return {**self.params, **self.scales.get(scale, {})}


@dataclass(frozen=True)
class Spec:
    """One report: its benches and measures, and the sections that render it.

    ``hebbnets reproduce NAME`` runs it; ``hebbnets report NAME`` renders ``reports/NAME.md``
    (and its figures) from ``records/NAME.jsonl`` alone. ``sections`` is the main page (verdicts
    and one figure first, then the tables, then the notes); ``pages`` are further pages of the
    same report, ``{page: sections}`` rendered into ``reports/NAME_<page>.md`` (e.g. the
    validation points behind every configuration), so that each page stays short. ``intro``
    says how the numbers were made; it is printed under the summary, with the records' provenance.
    """

    name: str
    title: str
    benches: tuple[Bench, ...] = ()
    measures: tuple[Measure, ...] = ()
    sections: tuple[Any, ...] = ()
    intro: str = ""
    pages: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_name(self.name, "name")
        object.__setattr__(self, "benches", tuple(self.benches))
        object.__setattr__(self, "measures", tuple(self.measures))
        object.__setattr__(self, "sections", tuple(self.sections))
        for page in dict(self.pages):
            _check_name(page, "pages")
        object.__setattr__(self, "pages", _frozen({k: tuple(v) for k, v in dict(self.pages).items()}))
        for s in (s for page in self.pages.values() for s in page):
            if not hasattr(s, "render"):
                raise ValueError(f"pages: expected Section objects with a render method, got {type(s).__name__}")
        names = [b.name for b in self.benches] + [m.name for m in self.measures]
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:
            raise ValueError(f"benches: spec {self.name!r} repeats the bench/measure name(s) {dup}")
        if not names:
            raise ValueError(f"benches: spec {self.name!r} has no bench and no measure")
        for s in self.sections:
            if not hasattr(s, "render"):
                raise ValueError(f"sections: expected Section objects with a render method, got {type(s).__name__}")

    def bench(self, name: str) -> Bench:
        for b in self.benches:
            if b.name == name:
                return b
        raise ValueError(f"bench: spec {self.name!r} has no bench {name!r}; "
                         f"expected one of {[b.name for b in self.benches]}")

    def measure(self, name: str) -> Measure:
        for m in self.measures:
            if m.name == name:
                return m
        raise ValueError(f"measure: spec {self.name!r} has no measure {name!r}")


_SPECS: dict[str, Spec] = {}


def register_spec(spec: Spec) -> Spec:
    """Make ``spec`` available to ``hebbnets reproduce`` / ``report`` by its name."""
    if not isinstance(spec, Spec):
        raise ValueError(f"spec: expected a Spec, got {type(spec).__name__}")
    if spec.name in _SPECS and _SPECS[spec.name] is not spec:
        raise ValueError(f"spec: {spec.name!r} is already registered")
    _SPECS[spec.name] = spec
    return spec


#: environment variable naming extra modules (comma-separated) that register specs, protocols,
#: statistics or figures: experiments kept outside the package, run by the same CLI
SPEC_MODULES_ENV = "HEBBNETS_SPEC_MODULES"


#: the package whose modules are the project's own specs: loaded on the first lookup by name, so
#: ``import hebbnets`` (the library) never imports the report specs (the tooling)
PROJECT_SPECS = "hebbnets.experiments.specs"


def load_spec_modules() -> None:
    """Import the project's specs and the modules named in ``$HEBBNETS_SPEC_MODULES`` (once each;
    by name, as plug-ins: the engine does not depend on the specs it runs)."""
    import importlib
    import os

    importlib.import_module(PROJECT_SPECS)
    for name in (n.strip() for n in os.environ.get(SPEC_MODULES_ENV, "").split(",")):
        if name:
            try:
                importlib.import_module(name)
            except ImportError as exc:
                raise ValueError(f"{SPEC_MODULES_ENV}: cannot import {name!r} ({exc})") from None


def project_specs() -> tuple[Spec, ...]:
    """The specs behind the committed reports (``PROJECT`` of the project's spec package), in
    the order the scorecard lists them."""
    import importlib

    return tuple(importlib.import_module(PROJECT_SPECS).PROJECT)


def spec_names() -> list[str]:
    """Registered spec names, sorted (after loading ``$HEBBNETS_SPEC_MODULES``)."""
    load_spec_modules()
    return sorted(_SPECS)


def get_spec(name: str) -> Spec:
    load_spec_modules()
    if name not in _SPECS:
        raise ValueError(f"name: unknown spec {name!r}; expected one of {spec_names()}")
    return _SPECS[name]
