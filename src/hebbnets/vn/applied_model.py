"""``vn_applied``: a registered model whose context selects an effective weight applied to its content.

Layout: the flattened input ``x`` ``(N, x_dim)`` ends with ``context_dims`` context entries
``c``; the rest is the content ``z`` (e.g. ``mnist_comp`` transform mode: 784 pixels of the digit,
then the 4-entry transformation code). The target ``y`` (flattened, ``(N, y_dim)``) is predicted
as the composed effective weight applied to the content::

    y_hat = W*_L(g_L) ... W*_1(g_1) z          (hebbnets.vn.applied.AppliedAtomStack)

Training clamps ``y`` (precision ``beta``) and the context (precision ``alpha``), infers the codes
and applies Atomic-Hebb; prediction infers the codes from the context alone (l1 weight
``test_lam``). With ``context_encoding="tuning"`` each context entry is first expanded into
``tuning_points`` Gaussian tuning curves on ``[-1, 1]`` (a fixed population code: a LASSO over a
``p``-dimensional context activates at most ``p`` atoms, so a 4-entry raw code can compose at
most a rank-4 weight; the population code lifts that limit). That expansion is hand-engineered.

Fitting runs the VN family's shared loop (``hebbnets.vn._fit.fit_local``): validation carved
from the training split only (``val_fraction``, seeded), the atoms of the best validation epoch
kept, ``patience`` epochs without improvement end the fit; ``partial_fit`` continues from the
current atoms.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._model import DataSpec, Model
from .._split import Split
from .._validation import check_choice, check_int, check_int_fields, check_positive
from ..models import register
from ._fit import LocalFitConfig, fit_local
from .applied import NORM_POLICIES, PATHS, AppliedAtomStack, apply_norm_policy


@dataclass
class AppliedVNConfig(LocalFitConfig):
    """Configuration of ``vn_applied`` (module docstring; the shared fields: ``LocalFitConfig``).

    Attributes:
        atoms: atoms per stacked layer ``(K_1, ..., K_L)`` (bottom first).
        hidden: sizes between stacked layers (``L - 1`` values; with ``residual`` all must equal
            the content size).
        context_dims: number of trailing input entries that are the context (>= 1).
        context_encoding: ``"raw"``, ``"tuning"`` (Gaussian population code, hand-engineered) or
            ``"tuning_centred"`` (the population code minus that of a zero entry, so a zero
            context entry selects nothing: with residual layers, the identity).
        tuning_points: tuning curves per context entry.
        context_groups: empty (every layer's atoms explain the whole context), or one tuple of
            raw context entries per stacked layer: the entries that layer's atoms explain (a
            hand-assigned routing, e.g. one transformation family per layer).
        residual: every layer is ``I + W*`` (zero code = identity; needs equal sizes).
        alpha, beta: context and output precisions; lam: l1 weight in training.
        test_lam: l1 weight at prediction (``None``: ``lam``).
        nonneg: codes ``>= 0``.
        max_iter, max_sweeps, tol, path: inference budget and product form (``AppliedAtomStack``).
        rho_u, rho_s, rho_c: Atomic-Hebb rates of ``U``, ``S`` and the context library ``C``.
        norm_policy: ``"unit"``, ``"clip"`` or ``"none"`` (``AppliedAtomStack.atomic_hebb``).
        reseed_after: re-seed atoms unused for this many batches (0 = never).
        epochs, patience, val_fraction, batch_size: the fit loop (module docstring).
        init: ``"data"`` (atoms from random training pairs) or ``"random"``.
        train_codes: ``"clamped"`` infers the training codes with the target clamped (the VN's
            learning phase); ``"context"`` infers them from the context alone, as at prediction,
            and the target enters only the Atomic-Hebb residual (a (choice) that removes the
            mismatch between the codes learned from and the codes predicted with).
        progress, dtype: progress bar, ``"float32"``/``"float64"``.
    """

    atoms: tuple[int, ...] = (256,)
    hidden: tuple[int, ...] = ()
    context_dims: int = 1
    context_encoding: str = "raw"
    tuning_points: int = 9
    context_groups: tuple[tuple[int, ...], ...] = ()
    residual: bool = False
    alpha: float = 1.0
    beta: float = 1.0
    nonneg: bool = False
    max_iter: int = 100
    max_sweeps: int = 5
    tol: float = 1e-4
    path: str = "auto"
    rho_u: float = 0.05
    rho_s: float = 0.05
    rho_c: float = 0.05
    norm_policy: str = "unit"
    reseed_after: int = 50
    epochs: int = 30
    init: str = "data"
    train_codes: str = "clamped"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.atoms or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in self.atoms):
            raise ValueError(f"atoms: expected a non-empty tuple of positive ints, got {self.atoms!r}")
        if len(self.hidden) != len(self.atoms) - 1 or any(isinstance(h, bool) or not isinstance(h, int) or h < 1
                                                           for h in self.hidden):
            raise ValueError(f"hidden: expected {len(self.atoms) - 1} positive int(s), got {self.hidden!r}")
        check_int(self.context_dims, "context_dims")
        check_choice(self.context_encoding, ("raw", "tuning", "tuning_centred"), "context_encoding")
        if self.context_groups:
            ok = len(self.context_groups) == len(self.atoms) and all(
                len(g) > 0 and all(isinstance(j, int) and not isinstance(j, bool) and 0 <= j < self.context_dims for j in g)
                for g in self.context_groups)
            if not ok:
                raise ValueError(f"context_groups: expected {len(self.atoms)} non-empty tuples of context entries in "
                                 f"[0, {self.context_dims}), got {self.context_groups!r}")
        check_int(self.tuning_points, "tuning_points", minimum=2)
        for name in ("alpha", "beta", "lam", "rho_u", "rho_s", "rho_c"):
            check_positive(getattr(self, name), name, allow_zero=True)
        if self.test_lam is not None:
            check_positive(self.test_lam, "test_lam", allow_zero=True)
        check_positive(self.tol, "tol")
        check_int_fields(self, ("max_iter", "max_sweeps"))
        check_int(self.reseed_after, "reseed_after", minimum=0)
        check_choice(self.path, PATHS, "path")
        check_choice(self.norm_policy, NORM_POLICIES, "norm_policy")
        check_choice(self.init, ("data", "random"), "init")
        check_choice(self.train_codes, ("clamped", "context"), "train_codes")


def tuning_code(c: torch.Tensor, points: int) -> torch.Tensor:
    """Gaussian population code: ``(B, p) -> (B, p * points)``, curves centred on
    ``linspace(-1, 1, points)`` with a width of one spacing."""
    centres = torch.linspace(-1.0, 1.0, points, dtype=c.dtype, device=c.device)
    width = 2.0 / (points - 1)
    return torch.exp(-0.5 * ((c[..., None] - centres) / width) ** 2).flatten(-2)


@register("vn_applied")
class AppliedVN(Model):
    """Applied-weight Vector Network (module docstring)."""

    Config = AppliedVNConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        if spec.is_classification:
            raise ValueError("split: vn_applied predicts real-valued targets; got integer class labels")
        if spec.x_masked:
            raise ValueError("x_mask: vn_applied takes no input mask (content and context are fully observed)")
        n = spec.x_dim - cfg.context_dims
        if n < 1:
            raise ValueError(f"context_dims: {cfg.context_dims} leaves no content in inputs of {spec.x_dim} entries")
        sizes = (n, *cfg.hidden, spec.y_dim)
        if cfg.residual and len(set(sizes)) != 1:
            raise ValueError(f"residual: needs content, hidden and target sizes equal, got {sizes}")
        width = 1 if cfg.context_encoding == "raw" else cfg.tuning_points  # encoded entries per raw entry
        p = cfg.context_dims * width
        rows = None
        if cfg.context_groups:
            rows = [torch.zeros(p) for _ in cfg.atoms]
            for mask, group in zip(rows, cfg.context_groups):
                for j in group:
                    mask[j * width : (j + 1) * width] = 1.0
        self.stack = AppliedAtomStack(
            sizes, cfg.atoms, context_dim=p, alpha=cfg.alpha, beta=cfg.beta, lam=cfg.lam, nonneg=cfg.nonneg,
            residual=cfg.residual, max_iter=cfg.max_iter, max_sweeps=cfg.max_sweeps, tol=cfg.tol, path=cfg.path,
            context_rows=rows, dtype=getattr(torch, cfg.dtype),
        )
        self.register_buffer("initialised", torch.zeros((), dtype=torch.bool))

    # -- data -------------------------------------------------------------------------------------
    def _split_input(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(N, *x_shape)`` -> content ``(N, n)`` and (encoded) context ``(N, p)``."""
        cfg = self.config
        flat = x.reshape(x.shape[0], -1).to(self.stack.dtype)
        z, c = flat[:, : -cfg.context_dims], flat[:, -cfg.context_dims:]
        if cfg.context_encoding != "raw":
            c = tuning_code(c, cfg.tuning_points)
            if cfg.context_encoding == "tuning_centred":
                c = c - tuning_code(torch.zeros_like(c[:1, : cfg.context_dims]), cfg.tuning_points)
        return z, c

    def _targets(self, split: Split) -> tuple[torch.Tensor, torch.Tensor | None]:
        y = split.y.reshape(len(split), -1).to(self.stack.dtype)
        ym = None if split.y_mask is None else split.y_mask.reshape(len(split), -1).to(self.stack.dtype)
        return y, ym

    @torch.no_grad()
    def _init_from_data(self, split: Split) -> None:
        """**(choice)** Atom ``k`` starts as the map of one random training pair: ``s_k`` along its
        content, ``c_k`` along its context (both unit norm), and ``u_k`` such that the code
        ``g_k = ||c||`` that reproduces the pair's context also maps its content to its target
        (minus the content, for residual layers)."""
        gen = torch.Generator().manual_seed(self.seed)
        z, c = self._split_input(split.x)
        y, _ = self._targets(split)
        for layer in self.stack.layers:
            if layer.S.shape[0] != z.shape[1] or layer.U.shape[0] != y.shape[1]:
                continue  # a hidden layer of a non-residual stack keeps its random start
            routed = c * layer.context_rows  # the context entries this layer explains
            pool = (routed.norm(dim=-1) > 1e-6).nonzero().squeeze(-1)  # pairs that address this layer
            if len(pool) == 0:
                continue
            idx = pool[torch.randint(len(pool), (layer.num_atoms,), generator=gen, device=gen.device).to(pool.device)]
            zk, yk, ck = z[idx], y[idx], routed[idx]
            out = yk - zk if layer.residual else yk
            z_norm, c_norm = zk.norm(dim=-1).clamp_min(1e-12), ck.norm(dim=-1).clamp_min(1e-12)
            layer.S.copy_((zk / z_norm[:, None]).T)
            layer.C.copy_((ck / c_norm[:, None]).T)
            layer.U.copy_((out / (z_norm * c_norm)[:, None]).T)

    # -- fit / predict ----------------------------------------------------------------------------
    def _fit(self, split: Split) -> None:
        cfg = self.config

        def init(train: Split) -> None:  # on the training part only: validation stays unseen
            if not bool(self.initialised):
                if cfg.init == "data":
                    self._init_from_data(train)
                self.initialised.fill_(True)

        z, c = self._split_input(split.x)
        y, ym = self._targets(split)

        def learn_batch(i: torch.Tensor) -> float:
            if cfg.train_codes == "clamped":
                inf = self.stack.infer(z[i], c[i], y[i], y_mask=None if ym is None else ym[i])
            else:
                inf = self.stack.infer(z[i], c[i])
                inf.y, inf.y_mask = y[i][:, None], None if ym is None else ym[i][:, None]
            self.stack.atomic_hebb(inf, cfg.rho_u, cfg.rho_s, cfg.rho_c, cfg.norm_policy, cfg.reseed_after)
            return float(self.stack.energy(inf).sum())

        fit_local(self, split, learn_batch, desc="vn_applied fit", on_start=init)

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        if x_mask is not None:
            raise ValueError("x_mask: vn_applied takes no input mask")
        cfg = self.config
        lam = cfg.lam_for("predict")
        z, c = self._split_input(x)
        outs = []
        for start in range(0, len(z), 512):
            inf = self.stack.infer(z[start : start + 512], c[start : start + 512], lam=lam)
            outs.append(self.stack.output(inf.codes, inf.z)[:, 0])
        return torch.cat(outs).reshape(x.shape[0], *self.spec.y_shape).to(x.dtype)  # the caller's dtype


__all__ = ["AppliedVN", "AppliedVNConfig", "tuning_code"]
