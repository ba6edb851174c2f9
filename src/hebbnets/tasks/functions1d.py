"""``functions1d``: 1D signals composed from four primitive families; OOD = unseen combinations.

Signals live on ``t in [0, 1]`` sampled at ``length`` points. Four primitive families, each with
random parameters and values in roughly ``[-1, 1]``:

* ``sin``:   ``a sin(2 pi f t)``
* ``cos``:   ``a cos(2 pi f t)``
* ``poly``:  a polynomial of degree <= 3 in ``2t - 1``, rescaled so its peak magnitude is ``a``
* ``gauss``: ``a exp(-(t - mu)^2 / (2 s^2))``

A *combination* is written as a string: a sum of terms joined by ``+``, where a term is a family
(``"sin"``) or a nested composition ``"outer(inner)"`` meaning ``outer(z)`` with
``z = (inner(t) + 1) / 2`` used in place of ``t`` (e.g. ``"sin(poly)"``: a sine of a
polynomial; ``"gauss(sin)"``: a Gaussian of a sine). Sums are canonical up to order
(``"poly+sin" == "sin+poly"``).

Every split is a list of combinations and a task parameter: ``train_combos`` (default: the four
single primitives, four of the six family pairs, and two nested forms), ``id_combos`` (default:
the training combinations, fresh samples), ``ood_pairs`` (the two family pairs never trained
together; every family is seen), ``ood_triples`` (sums of three) and ``ood_nested`` (nested forms
never trained). A combination listed in an OOD split must not occur in ``train_combos``.

Why these default pairs: ``sin`` and ``cos`` differ only in phase, so holding out e.g.
``sin+gauss`` while training ``cos+gauss`` tests nothing (a dense MLP degraded on such pairs no
more than model-free linear interpolation of the gap did). The training pairs are therefore the
bipartite set {sin, cos} x {poly, gauss}, and ``ood_pairs`` holds the two within-group pairs
``sin+cos`` (two oscillations, a beat) and ``poly+gauss`` (no oscillation): each family is
trained in sums, never with these partners. With 0.5-4 cycles and a 30% gap the MLP degrades
clearly more than interpolation does. Both splits are measured by the ``vn_benchmarks`` spec
(``reports/vn_benchmarks.md``, "Is functions1d ``ood_pairs`` compositional?").

Modes: ``reconstruct`` (input = output = the signal, plus optional input ``noise``) and
``masked`` (a contiguous segment of ``mask_fraction * length`` entries is hidden: ``x`` is the
zero-filled signal with its ``x_mask``, ``y`` the full signal, metric ``mse_missing``).
"""
from __future__ import annotations

import math
import re
from typing import Any

import torch

from .._split import Split
from .._validation import check_choice
from . import _configs
from ._task import Task, check_params, register_task

FAMILIES = ("sin", "cos", "poly", "gauss")
MODES = ("reconstruct", "masked")

_SPLITS = dict(
    train_combos=("sin", "cos", "poly", "gauss", "sin+poly", "sin+gauss", "cos+poly", "cos+gauss",
                  "sin(poly)", "gauss(sin)"),
    id_combos=None,  # None: the training combinations
    ood_pairs=("sin+cos", "poly+gauss"),
    ood_triples=("sin+cos+poly", "sin+cos+gauss", "sin+poly+gauss", "cos+poly+gauss"),
    ood_nested=("cos(poly)", "gauss(cos)", "sin(gauss)", "poly(sin)"),
)
_COMMON = dict(mode="reconstruct", noise=0.0, mask_fraction=0.3, freq_low=0.5, freq_high=4.0,
               amp_low=0.5, amp_high=1.0, width_low=0.06, width_high=0.2, **_SPLITS)
_DEFAULTS = {
    "quick": dict(length=64, n_train=2000, n_test=300, **_COMMON),
    "paper": dict(length=128, n_train=20000, n_test=2000, **_COMMON),
}

# Per mode, the configuration of each model chosen on validation data carved from the training
# split, with every validation point behind it: hebbnets/tasks/configs/functions1d-<mode>.json
# (reconstruct mode reuses the masked-mode choice; `hebbnets reproduce vn_benchmarks --stage tune`).

_TERM = re.compile(r"^([a-z]+)(?:\(([a-z]+)\))?$")


def parse_combo(combo: str, name: str = "combo") -> tuple[tuple[str, str | None], ...]:
    """Parse ``"sin+cos(poly)"`` into sorted terms ``(("cos", "poly"), ("sin", None))``.

    Raises:
        ValueError: naming ``name`` for an empty string, an unknown family or bad syntax.
    """
    if not isinstance(combo, str) or not combo.strip():
        raise ValueError(f"{name}: expected a non-empty combination string, got {combo!r}")
    terms = []
    for raw in combo.replace(" ", "").split("+"):
        m = _TERM.match(raw)
        if m is None:
            raise ValueError(f"{name}: cannot parse term {raw!r} of {combo!r}; use 'fam' or 'outer(inner)'")
        for fam in m.groups():
            if fam is not None and fam not in FAMILIES:
                raise ValueError(f"{name}: unknown family {fam!r} in {combo!r}; expected one of {list(FAMILIES)}")
        terms.append((m.group(1), m.group(2)))
    return tuple(sorted(terms, key=lambda t: (t[0], t[1] or "")))


def canonical(combo: str, name: str = "combo") -> str:
    """The canonical spelling of a combination (terms sorted): ``"poly+sin" -> "poly+sin"``."""
    return "+".join(o if i is None else f"{o}({i})" for o, i in parse_combo(combo, name))


def _primitive(fam: str, z: torch.Tensor, gen: torch.Generator, p: dict[str, Any]) -> torch.Tensor:
    """One random primitive of family ``fam`` evaluated at ``z`` (N, L) -> (N, L)."""
    n = z.shape[0]
    u = lambda lo, hi: lo + (hi - lo) * torch.rand(n, 1, generator=gen)  # noqa: E731  (N, 1)
    amp = u(p["amp_low"], p["amp_high"])  # (N, 1)
    if fam == "sin":
        return amp * torch.sin(2 * math.pi * u(p["freq_low"], p["freq_high"]) * z)
    if fam == "cos":
        return amp * torch.cos(2 * math.pi * u(p["freq_low"], p["freq_high"]) * z)
    if fam == "poly":
        coef = torch.randn(n, 4, generator=gen)  # (N, 4) degree <= 3
        s = 2 * z - 1
        v = coef[:, :1] + coef[:, 1:2] * s + coef[:, 2:3] * s**2 + coef[:, 3:4] * s**3  # (N, L)
        # peak magnitude over [-1, 1] (checked on a fine grid so nested inputs stay bounded too)
        grid = torch.linspace(-1, 1, 201)
        vg = coef[:, :1] + coef[:, 1:2] * grid + coef[:, 2:3] * grid**2 + coef[:, 3:4] * grid**3  # (N, 201)
        return amp * v / vg.abs().amax(dim=1, keepdim=True).clamp_min(1e-6)
    # gauss
    mu = u(0.1, 0.9)
    width = u(p["width_low"], p["width_high"])
    return amp * torch.exp(-((z - mu) ** 2) / (2 * width**2))


def sample_combo(combo: str, n: int, t: torch.Tensor, gen: torch.Generator, p: dict[str, Any]) -> torch.Tensor:
    """``n`` random signals of one combination on the grid ``t`` (L,); returns (n, L)."""
    z = t.expand(n, -1)  # (n, L)
    out = torch.zeros(n, t.shape[0])
    for outer, inner in parse_combo(combo):
        if inner is None:
            out = out + _primitive(outer, z, gen, p)
        else:
            # the inner signal (peak magnitude <= amp_high <= 1 for sin/cos/poly) is mapped to
            # [0, 1] and used as the outer primitive's argument
            zi = ((_primitive(inner, z, gen, p) + 1) / 2).clamp(0, 1)  # (n, L)
            out = out + _primitive(outer, zi, gen, p)
    return out


def _sample_split(combos: tuple[str, ...], n: int, t: torch.Tensor, gen: torch.Generator,
                  p: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` signals, combinations drawn uniformly; returns signals (n, L) and combo ids (n,)."""
    ids = torch.randint(len(combos), (n,), generator=gen)  # (n,)
    sig = torch.zeros(n, t.shape[0])
    for k, combo in enumerate(combos):
        rows = (ids == k).nonzero().flatten()
        if len(rows):
            sig[rows] = sample_combo(combo, len(rows), t, gen, p)
    return sig, ids


def _make_split(sig: torch.Tensor, p: dict[str, Any], gen: torch.Generator) -> Split:
    n, length = sig.shape
    if p["mode"] == "reconstruct":
        x = sig + p["noise"] * torch.randn(n, length, generator=gen) if p["noise"] > 0 else sig.clone()
        return Split(x, sig)
    seg = max(1, round(p["mask_fraction"] * length))
    start = torch.randint(0, length - seg + 1, (n,), generator=gen)  # (n,)
    pos = torch.arange(length)
    mask = ~((pos[None, :] >= start[:, None]) & (pos[None, :] < start[:, None] + seg))  # (n, L) True = seen
    x = sig * mask
    if p["noise"] > 0:
        x = x + p["noise"] * torch.randn(n, length, generator=gen) * mask
    return Split(x, sig, x_mask=mask.float())


def _check_combos(p: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for key in ("train_combos", "id_combos", "ood_pairs", "ood_triples", "ood_nested"):
        value = p[key]
        if value is None and key == "id_combos":
            continue
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ValueError(f"{key}: expected a list of combination strings, got {value!r}")
        if key != "train_combos" and len(value) == 0:
            continue  # an empty OOD split is skipped
        if len(value) == 0:
            raise ValueError(f"{key}: must not be empty")
        out[key] = tuple(dict.fromkeys(canonical(c, key) for c in value))
    out.setdefault("id_combos", out["train_combos"])
    trained = set(out["train_combos"])
    for key in ("ood_pairs", "ood_triples", "ood_nested"):
        overlap = sorted(set(out.get(key, ())) & trained)
        if overlap:
            raise ValueError(f"{key}: combination(s) {overlap} also occur in train_combos; OOD must be unseen")
    bad_id = sorted(set(out["id_combos"]) - trained)
    if bad_id:
        raise ValueError(f"id_combos: {bad_id} are not training combinations")
    return out


@register_task("functions1d")
def make_functions1d(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Build the task. Parameters (defaults depend on ``scale``): ``mode`` ("reconstruct" |
    "masked"), ``length``, ``n_train``, ``n_test`` (per test split), ``noise`` (input noise std),
    ``mask_fraction``, ``freq_low``/``freq_high`` (cycles over [0, 1]), ``amp_low``/``amp_high``,
    ``width_low``/``width_high`` (Gaussian widths), and the split definitions ``train_combos``,
    ``id_combos``, ``ood_pairs``, ``ood_triples``, ``ood_nested`` (lists of combination strings,
    see the module docstring; an empty OOD list drops that split).

    Returns a ``Task`` with ``x``/``y`` shaped ``(N, length)``; ``info`` holds the grid ``t``,
    the canonical combinations of every split and each sample's combination id.
    """
    p = check_params(params, _DEFAULTS[scale], "functions1d")
    check_choice(p["mode"], MODES, "mode")
    for key in ("length", "n_train", "n_test"):
        if isinstance(p[key], bool) or not isinstance(p[key], int) or p[key] < (4 if key == "length" else 1):
            raise ValueError(f"{key}: expected a positive int (length >= 4), got {p[key]!r}")
    if not 0 < p["mask_fraction"] < 1:
        raise ValueError(f"mask_fraction: must be in (0, 1), got {p['mask_fraction']!r}")
    if p["noise"] < 0:
        raise ValueError(f"noise: must be >= 0, got {p['noise']!r}")
    for lo, hi in (("freq_low", "freq_high"), ("amp_low", "amp_high"), ("width_low", "width_high")):
        if not 0 < p[lo] <= p[hi]:
            raise ValueError(f"{lo}: need 0 < {lo} <= {hi}, got {p[lo]!r}, {p[hi]!r}")
    if p["amp_high"] > 1:
        raise ValueError(f"amp_high: must be <= 1 so nested arguments stay in [0, 1], got {p['amp_high']!r}")
    combos = _check_combos(p)

    gen = torch.Generator().manual_seed(seed)
    t = torch.linspace(0, 1, p["length"])  # (L,)
    sig, ids = _sample_split(combos["train_combos"], p["n_train"], t, gen, p)
    train = _make_split(sig, p, gen)
    tests: dict[str, Split] = {}
    test_ids: dict[str, torch.Tensor] = {}
    for split, key in (("id", "id_combos"), ("ood_pairs", "ood_pairs"), ("ood_triples", "ood_triples"),
                       ("ood_nested", "ood_nested")):
        if key not in combos:
            continue
        sig, cid = _sample_split(combos[key], p["n_test"], t, gen, p)
        tests[split] = _make_split(sig, p, gen)
        test_ids[split] = cid
    # the stored params keep the canonical split definitions (plain lists: JSON-friendly)
    params_out = {"seed": seed, "scale": scale, **p}
    for key, value in combos.items():
        params_out[key] = list(value)
    return Task(
        name="functions1d",
        train=train,
        tests=tests,
        metric="mse" if p["mode"] == "reconstruct" else "mse_missing",
        params=params_out,
        model_configs=_configs.chosen(f"functions1d-{p['mode']}"),
        info={"t": t, "combos": {"train": combos["train_combos"], "id": combos["id_combos"],
                                 **{s: combos[s] for s in ("ood_pairs", "ood_triples", "ood_nested") if s in combos}},
              "combo_ids": {"train": ids, **test_ids}},
    )
