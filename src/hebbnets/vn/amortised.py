"""Amortised inference for Vector Networks: a feed-forward encoder per layer that predicts the
codes FISTA would find (LISTA, Gregor and LeCun 2010), used alone or as FISTA's warm start.

The paper's stated limitation is that iterative inference is slower than one feed-forward pass;
its proposed fix is a learned feed-forward approximation. ``LISTA`` unrolls ``steps`` ISTA
iterations with learned matrices and per-atom thresholds::

    b = W x                        (W: (K, n), initialised c S^T / L)
    z_1 = st(b, theta)             (theta: (K,), initialised lam / L; st = soft threshold)
    z_{t+1} = st(b + R z_t, theta) (R: (K, K), initialised I - c S^T S / L)

so at its dictionary initialisation (``LISTA.from_dictionary``) it *is* ``steps`` ISTA
iterations of the layer's LASSO (tested against ``ista_reference``). Training (the one gradient
loop, ``hebbnets.training``, via ``partial_fit`` from that initialisation) minimises either
``objective="codes"``, the squared error to the codes of a trained VN (classical LISTA), or
``objective="lasso"``, the layer's LASSO objective itself at the encoded codes (amortised
inference without targets; the dictionary is held fixed). The soft threshold gives exact zeros,
as FISTA's codes have. Neither objective wins everywhere: on ``functions1d`` (150 atoms, 3
steps) a probe gave a prediction error 20-200x FISTA's with ``"codes"`` and about 2x with
``"lasso"`` (whose codes are much less sparse); on a small ``toy_atoms`` VN ``"codes"`` gave the
lower error and the better warm start.

``AmortisedVN`` holds a trained ``VectorNetwork`` and one ``LISTA`` per layer: ``encode`` chains
them bottom-up (layer ``l+1`` reads the message ``U_l g_l`` of the encoded codes below),
``predict`` reads the output like the VN does, ``infer`` runs the VN's FISTA warm-started from
the encoded codes. Encoders learn the prediction-time codes (input clamped, no target) of the
VN's own inference, each layer from the inputs the converged inference gave it (teacher forcing).
``measure`` times all three against plain FISTA.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._model import DataSpec
from .._split import Split
from ..metrics import get_metric
from ..models import register
from .._validation import check_choice
from ..training import BackpropModel, TrainConfig, supervised_loss
from .fista import keep_topk, largest_eigenvalue, soft_threshold
from .network import Inference, VectorNetwork

AMORTISED_FILE = "amortised.json"


OBJECTIVES = ("codes", "lasso")


@dataclass
class LISTAConfig(TrainConfig):
    """``LISTA`` settings: ``steps`` unrolled iterations (>= 1), ``nonneg`` codes, the training
    ``objective`` (``"codes"`` or ``"lasso"``, module docstring; ``"lasso"`` needs the dictionary
    of ``from_dictionary``), plus the training loop's (``TrainConfig``). With ``"lasso"`` the
    loop's validation loss (early stopping) is still the squared error to the split's codes,
    so ``AmortisedVN.fit`` uses ``restore="last"`` for it."""

    steps: int = 3
    nonneg: bool = False
    objective: str = "codes"

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"steps: expected an int >= 1, got {self.steps!r}")
        check_choice(self.objective, OBJECTIVES, "objective")


@register("lista")
class LISTA(BackpropModel):
    """Learned ISTA (module docstring): inputs ``x`` ``(N, *x_shape)`` (flattened; with an input
    mask, ``[x * m, m]``) to sparse codes ``(N, K)``, trained on ``Split(x, codes)`` by the MSE of
    the codes. A fresh ``fit`` starts from a random encoder; ``from_dictionary`` builds one that
    equals ISTA on a given dictionary, and ``partial_fit`` trains it from there."""

    Config = LISTAConfig

    def _build(self, spec: DataSpec) -> None:
        if spec.is_classification or len(spec.y_shape) != 1:
            raise ValueError(f"split: LISTA predicts codes y of shape (N, K); got per-sample shape {spec.y_shape}")
        k = spec.y_dim
        self.encode_in = nn.Linear(spec.x_dim * (2 if spec.x_masked else 1), k, bias=False)  # W
        self.recurrent = nn.Parameter(torch.zeros(k, k))  # R
        self.theta = nn.Parameter(torch.full((k,), 1e-2))  # per-atom thresholds
        if self.config.objective == "lasso":
            # the fixed LASSO the encoder amortises: precision/2 ||m (x - D z)||^2 + lam ||z||_1
            self.register_buffer("dictionary", torch.zeros(spec.x_dim, k))  # D (n, K)
            self.register_buffer("lasso_weights", torch.zeros(2))  # (lam, precision)

    def _fit(self, split: Split) -> None:
        if self.config.objective == "lasso" and not bool(self.lasso_weights[1] > 0):
            raise ValueError("objective: 'lasso' needs the dictionary: build the encoder with "
                             "LISTA.from_dictionary and train it with partial_fit")
        super()._fit(split)

    def _loss(self, batch: Split) -> torch.Tensor:
        z = self._forward(batch.x, batch.x_mask)  # (B, K)
        if self.config.objective == "codes":
            return supervised_loss(z, batch, self.spec)
        lam, precision = self.lasso_weights
        r = batch.x.reshape(len(batch), -1) - z @ self.dictionary.T  # (B, n)
        if batch.x_mask is not None:
            r = r * batch.x_mask.reshape(len(batch), -1)
        return (0.5 * precision * (r**2).sum(-1) + lam * z.abs().sum(-1)).mean()

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        flat = x.reshape(x.shape[0], -1)  # (N, n)
        if self.spec.x_masked:
            m = torch.ones_like(flat) if x_mask is None else x_mask.reshape(x.shape[0], -1)
            flat = torch.cat([flat * m, m], dim=1)  # (N, 2n)
        elif x_mask is not None:
            raise ValueError("x_mask: this encoder was trained without an input mask")
        b = self.encode_in(flat)  # (N, K)
        theta = self.theta.clamp_min(0.0)  # a threshold below zero has no meaning
        z = soft_threshold(b, theta, self.config.nonneg)
        for _ in range(self.config.steps - 1):
            z = soft_threshold(b + z @ self.recurrent.T, theta, self.config.nonneg)
        return z

    @classmethod
    def from_dictionary(cls, S: torch.Tensor, lam: float, precision: float = 1.0, lip: float | None = None,
                        x_masked: bool = False, seed: int = 0, **config: Any) -> "LISTA":
        """A built encoder equal to ``steps`` ISTA iterations (from zero) on the LASSO
        ``min_g precision/2 ||x - S g||^2 + lam ||g||_1``.

        Args:
            S: ``(n, K)`` dictionary (a VN layer's input-side atoms).
            lam: l1 weight; precision: weight of the reconstruction term.
            lip: step ``1 / lip``; default ``1.01 x`` the largest eigenvalue of ``precision S^T S``
                (FISTA's step in ``hebbnets.vn.fista``).
            x_masked: the encoder takes an input mask (its mask columns start at zero).
            seed: the model's seed; **config: ``LISTAConfig`` fields.
        """
        if S.ndim != 2:
            raise ValueError(f"S: expected an (n, K) dictionary, got shape {tuple(S.shape)}")
        n, k = S.shape
        model = cls(cls.Config(**config), seed=seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model.build(DataSpec((n,), (k,), None, bool(x_masked)))
        S = S.detach().double()
        gram = precision * S.T @ S  # (K, K)
        if lip is None:
            lip = 1.01 * float(largest_eigenvalue(gram))
        with torch.no_grad():
            weight = torch.zeros_like(model.encode_in.weight)
            weight[:, :n] = (precision * S.T / lip).float()
            model.encode_in.weight.copy_(weight)
            model.recurrent.copy_((torch.eye(k, dtype=torch.float64) - gram / lip).float())
            model.theta.fill_(lam / lip)
            if model.config.objective == "lasso":
                model.dictionary.copy_(S.float())
                model.lasso_weights.copy_(torch.tensor([lam, precision]))
        return model


def _readout(vn: VectorNetwork, codes: list[torch.Tensor]) -> torch.Tensor:
    """The VN's prediction from its codes: ``S_1 g_1`` or ``U_L g_L`` (flat ``(B, y_dim)``)."""
    if vn.config.output == "reconstruction":
        return vn.layers[0].reconstruct(codes[0])
    return vn.layers[-1].message(codes[-1])


class AmortisedVN:
    """A trained ``VectorNetwork`` with one ``LISTA`` encoder per layer (module docstring).

    Build with ``AmortisedVN.fit(vn, split)``; ``encoders[l]`` is layer ``l``'s encoder.
    """

    def __init__(self, vn: VectorNetwork, encoders: list[LISTA]):
        if not isinstance(vn, VectorNetwork) or vn.spec is None:
            raise ValueError("vn: expected a fitted VectorNetwork")
        if len(encoders) != len(vn.layers):
            raise ValueError(f"encoders: expected {len(vn.layers)} (one per layer), got {len(encoders)}")
        for l, (enc, layer) in enumerate(zip(encoders, vn.layers)):
            if not isinstance(enc, LISTA) or enc.spec is None or enc.spec.y_shape != (layer.num_atoms,):
                raise ValueError(f"encoders: entry {l} is not a built LISTA with {layer.num_atoms} outputs")
        self.vn, self.encoders = vn, list(encoders)

    @classmethod
    def fit(cls, vn: VectorNetwork, split: Split, steps: int = 3, objective: str = "codes", seed: int = 0,
            **config: Any) -> "AmortisedVN":
        """Train an encoder per layer on the inputs ``vn``'s inference gives each layer on
        ``split`` (prediction mode), to reproduce its codes (``"codes"``) or to minimise the
        layer's bottom-up LASSO (``"lasso"``; module docstring).

        Each encoder starts as ISTA on its layer's dictionary (``LISTA.from_dictionary``) and
        is trained by ``partial_fit`` (the one training loop, validation carved from ``split``;
        with ``"lasso"``, ``restore="last"`` unless ``config`` says otherwise).

        Args:
            vn: a fitted ``VectorNetwork`` (its atoms are not changed).
            split: training inputs ``x`` (and ``x_mask``); its targets are not used.
            steps: unrolled iterations per encoder; objective: ``"codes"`` or ``"lasso"``;
            seed: seeds the encoders' training.
            **config: ``LISTAConfig`` training fields (``lr``, ``epochs``, ``progress``, ...).
        """
        check_choice(objective, OBJECTIVES, "objective")
        if objective == "lasso":
            config.setdefault("restore", "last")
        if not isinstance(vn, VectorNetwork) or vn.spec is None:
            raise ValueError("vn: expected a fitted VectorNetwork")
        if not isinstance(split, Split) or len(split) == 0:
            raise ValueError("split: expected a non-empty hebbnets.Split")
        parts = [inf for _, inf in vn.iter_inference(split)]
        encoders = []
        for l, layer in enumerate(vn.layers):
            inputs = torch.cat([inf.inputs[l] for inf in parts]).float()  # (N, n_l)
            codes = torch.cat([inf.codes[l] for inf in parts]).float()  # (N, K_l)
            mask = vn.flatten(split.x_mask) if l == 0 else None
            c_in = vn.precisions(l)[0]
            enc = LISTA.from_dictionary(layer.S, parts[0].lams[l], precision=c_in, x_masked=mask is not None, seed=seed,
                                        steps=steps, nonneg=vn.config.nonneg, objective=objective, **config)
            enc.partial_fit(Split(inputs, codes, None if mask is None else mask.float()))
            encoders.append(enc)
        return cls(vn, encoders)

    @torch.no_grad()
    def encode(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> list[torch.Tensor]:
        """Per layer the encoded codes ``(B, K_l)`` for inputs ``x`` ``(B, *x_shape)``."""
        vn = self.vn
        x_l, mask = vn.flatten(x), vn.flatten(x_mask)
        codes = []
        for l, (enc, layer) in enumerate(zip(self.encoders, vn.layers)):
            g = enc.predict(x_l.float(), None if mask is None or l > 0 else mask.float()).to(vn.dtype)
            if l == len(vn.layers) - 1 and vn.config.topk:
                g = keep_topk(g, vn.config.topk)
            codes.append(g)
            x_l = layer.message(g)
        return codes

    def predict(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The VN's output read from the encoded codes (no iterations): ``(B, *y_shape)``."""
        out = _readout(self.vn, self.encode(x, x_mask))
        return out.reshape(x.shape[0], *self.vn.spec.y_shape).to(x.dtype)  # the caller's dtype

    def infer(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> Inference:
        """The VN's iterative inference (prediction mode) warm-started from the encoded codes."""
        vn = self.vn
        return vn.infer(vn.flatten(x), x_mask=vn.flatten(x_mask), init=self.encode(x, x_mask))

    def save(self, path: str | os.PathLike) -> None:
        """Write the VN and every encoder as hebbnets checkpoints under ``path``."""
        path = Path(path)
        self.vn.save(path / "vn")
        for l, enc in enumerate(self.encoders):
            enc.save(path / f"encoder{l}")
        (path / AMORTISED_FILE).write_text(json.dumps({"layers": len(self.encoders)}))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "AmortisedVN":
        """Read what ``save`` wrote."""
        from .. import models

        path = Path(path)
        if not (path / AMORTISED_FILE).is_file():
            raise ValueError(f"path: no {AMORTISED_FILE} in {str(path)!r}; not an AmortisedVN checkpoint")
        n = json.loads((path / AMORTISED_FILE).read_text())["layers"]
        return cls(models.load(path / "vn"), [models.load(path / f"encoder{l}") for l in range(n)])


# --- measurement --------------------------------------------------------------------------------------
def _timed(fn, repeats: int) -> tuple[Any, float]:
    """``fn()``'s result and its fastest wall time over ``repeats`` runs."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def _budget_ladder(max_iter: int) -> list[int]:
    """FISTA budgets 1, 2, 3, 4, 6, 8, 12, ... up to ``max_iter`` (about 1.5x apart)."""
    out, b = [], 1
    while b < max_iter:
        out.append(b)
        b = max(b + 1, round(b * 1.5))
    return out + [max_iter]


def _ladder(vn: VectorNetwork, run, repeats: int, score) -> list[tuple[int, float, float, float]]:
    """``run()`` (an inference) at every budget of ``_budget_ladder``: rows of
    ``(budget, seconds, energy, error)``; the VN's configuration is restored afterwards."""
    rows, config = [], vn.config
    try:
        for budget in _budget_ladder(config.max_iter):
            vn.config = dataclasses.replace(config, max_iter=budget)
            inf, sec = _timed(run, repeats)
            rows.append((budget, sec, *score(inf.codes)))
    finally:
        vn.config = config
    return rows


def _cheapest(rows: list[tuple[int, float, float, float]], col: int, target: float) -> tuple[int, float] | None:
    """``(budget, seconds)`` of the first row whose column ``col`` is <= ``target``."""
    return next(((row[0], row[1]) for row in rows if row[col] <= target), None)


def measure(amortised: AmortisedVN, split: Split, metric: str | None = None, repeats: int = 3) -> list[dict[str, Any]]:
    """Time and score plain FISTA, the encoders alone, and FISTA warm-started by them on ``split``.

    Energies are the VN's free energy at prediction (input clamped) per sample, averaged;
    ``error`` is ``metric`` (default: the split's) of the prediction. FISTA, plain and warm
    started, is also run at budgets of 1, 2, 3, 4, 6, ... iterations (per layer and sweep) up to
    the VN's ``max_iter``, to find the cheapest budget that matches a target energy (error).

    Returns:
        Three records (``method``: ``"fista"``, ``"amortised"``, ``"warm_start"``), each with
        ``seconds`` (fastest of ``repeats``), ``iterations``, ``energy``, ``error`` at the VN's
        own budget. ``amortised`` adds ``speedup_equal_energy`` / ``speedup_equal_error`` (the
        seconds of the cheapest plain-FISTA budget at least as good, over the encoders' seconds)
        with those budgets (``fista_budget_equal_energy`` / ``_error``; None, and no speed-up,
        when no budget up to ``max_iter`` matches, i.e. the encoders beat FISTA's full budget),
        ``error_ratio`` (its error / FISTA's) and ``energy_ratio``.
        ``warm_start`` adds ``speedup`` (FISTA's seconds / its own, both at the full budget),
        ``iteration_ratio``, and ``speedup_equal_energy`` with ``budget_equal_energy``: plain
        FISTA's seconds over those of the cheapest warm-started budget whose energy is no higher
        than plain FISTA's final energy (encoding included).
    """
    vn = amortised.vn
    fn = get_metric(metric or split.metric or "mse")
    x, xm = vn.flatten(split.x), vn.flatten(split.x_mask)

    def score(codes: list[torch.Tensor]) -> tuple[float, float]:
        pred = _readout(vn, codes).reshape(len(split), *vn.spec.y_shape).float()
        return float(vn.free_energy(x, None, xm, None, codes, vn.config.lams_for("train")).mean()), float(fn(pred, split))

    def record(method: str, codes: list[torch.Tensor], seconds: float, iterations: int) -> dict[str, Any]:
        e, err = score(codes)
        return {"method": method, "seconds": seconds, "iterations": iterations, "energy": e, "error": err}

    cold_run = lambda: vn.infer(x, x_mask=xm)  # noqa: E731
    warm_run = lambda: amortised.infer(split.x, split.x_mask)  # noqa: E731
    cold, t_cold = _timed(cold_run, repeats)
    codes, t_am = _timed(lambda: amortised.encode(split.x, split.x_mask), repeats)
    warm, t_warm = _timed(warm_run, repeats)
    rec_cold, rec_warm = record("fista", cold.codes, t_cold, cold.iterations), record("warm_start", warm.codes, t_warm, warm.iterations)
    rec_am = record("amortised", codes, t_am, 0)
    cold_rows = _ladder(vn, cold_run, repeats, score)
    for key, col in (("energy", 2), ("error", 3)):
        match = _cheapest(cold_rows, col, rec_am[key])
        rec_am[f"fista_budget_equal_{key}"] = None if match is None else match[0]
        rec_am[f"speedup_equal_{key}"] = None if match is None else match[1] / t_am
    rec_am["error_ratio"] = rec_am["error"] / rec_cold["error"] if rec_cold["error"] else float("inf")
    rec_am["energy_ratio"] = rec_am["energy"] / rec_cold["energy"] if rec_cold["energy"] else float("inf")
    rec_warm["speedup"] = t_cold / t_warm
    rec_warm["iteration_ratio"] = rec_warm["iterations"] / max(rec_cold["iterations"], 1)
    match = _cheapest(_ladder(vn, warm_run, repeats, score), 2, rec_cold["energy"])
    rec_warm["budget_equal_energy"] = None if match is None else match[0]
    rec_warm["speedup_equal_energy"] = None if match is None else t_cold / match[1]
    return [rec_cold, rec_am, rec_warm]


# --- the experiments runner's job ------------------------------------------------------------------
AMORTISED_OPTIONS = ("objective", "steps", "encoder", "repeats")
#: rows of ``amortised_job`` per test split: the ``measure`` field each reads (method, field)
_ROWS = {
    "fista_error": ("fista", "error"), "amortised_error": ("amortised", "error"),
    "warm_start_error": ("warm_start", "error"), "fista_seconds": ("fista", "seconds"),
    "amortised_seconds": ("amortised", "seconds"), "warm_start_seconds": ("warm_start", "seconds"),
    "error_ratio": ("amortised", "error_ratio"), "energy_ratio": ("amortised", "energy_ratio"),
    "speedup_equal_energy": ("amortised", "speedup_equal_energy"),
    "speedup_equal_error": ("amortised", "speedup_equal_error"),
    "fista_budget_equal_energy": ("amortised", "fista_budget_equal_energy"),
    "fista_budget_equal_error": ("amortised", "fista_budget_equal_error"),
    "warm_start_speedup": ("warm_start", "speedup"),
    "warm_start_speedup_equal_energy": ("warm_start", "speedup_equal_energy"),
    "warm_start_iteration_ratio": ("warm_start", "iteration_ratio"),
}


def check_amortised(model: Any, task: Any, options: dict[str, Any]) -> None:
    """Plan-time check of protocol ``"amortised"``: a ``VectorNetwork`` and known options."""
    unknown = sorted(set(options) - set(AMORTISED_OPTIONS))
    if unknown:
        raise ValueError(f"options: unknown option(s) {unknown} for protocol 'amortised'; known: {list(AMORTISED_OPTIONS)}")
    if not isinstance(model, VectorNetwork):
        raise ValueError(f"model: protocol 'amortised' needs a VectorNetwork ('vn'), got {type(model).__name__}")
    check_choice(options.get("objective", "lasso"), OBJECTIVES, "objective")
    LISTAConfig(**{"steps": options.get("steps", 3), **dict(options.get("encoder", {}))})  # fields checked


def amortised_job(ctx: Any) -> list[dict[str, Any]]:
    """Protocol ``"amortised"`` (``ctx``: an experiments ``FitContext``): fit the VN on
    ``task.train``, score it, train one ``LISTA`` per layer on the training inputs
    (``AmortisedVN.fit``; options ``objective`` (default ``"lasso"``), ``steps`` (3) and
    ``encoder``, ``LISTAConfig`` training fields), then ``measure`` every test split.

    Rows per test split: the VN's task metric, and from ``measure`` (named as in ``_ROWS``):
    the three methods' errors and seconds, the encoder's ``error_ratio`` / ``energy_ratio`` to
    plain FISTA, its ``speedup_equal_energy`` / ``speedup_equal_error`` (plain FISTA's cheapest
    budget at least as good, over the encoder's time; when no budget up to ``max_iter`` is as
    good, FISTA's full-budget time over the encoder's, and ``beyond_budget_<energy|error>`` = 1:
    a lower bound), and the warm start's speed-ups. ``stats["encoder_seconds"]``: training time.
    """
    ctx.fit()
    rows = ctx.score_tests()
    vn, opts = ctx.model, ctx.options
    t0 = time.perf_counter()
    am = AmortisedVN.fit(vn, ctx.task.train, steps=int(opts.get("steps", 3)), objective=opts.get("objective", "lasso"),
                         seed=ctx.seed, **{"progress": False, **dict(opts.get("encoder", {}))})
    ctx.stats["encoder_seconds"] = time.perf_counter() - t0
    for name, split in ctx.task.tests.items():
        recs = {r["method"]: r for r in measure(am, split, ctx.task.metric, repeats=int(opts.get("repeats", 3)))}
        fista_full = recs["fista"]["seconds"]
        for key in ("energy", "error"):  # no FISTA budget as good: a lower bound from the full budget
            beyond = recs["amortised"][f"speedup_equal_{key}"] is None
            if beyond:
                recs["amortised"][f"speedup_equal_{key}"] = fista_full / recs["amortised"]["seconds"]
            rows.append({"split": name, "metric": f"beyond_budget_{key}", "value": float(beyond)})
        for metric, (method, field) in _ROWS.items():
            v = recs[method][field]
            rows.append({"split": name, "metric": metric, "value": None if v is None else float(v)})
    return rows


__all__ = ["AmortisedVN", "LISTA", "LISTAConfig", "amortised_job", "check_amortised", "measure"]
