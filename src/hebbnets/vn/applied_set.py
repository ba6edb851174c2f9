"""``vn_applied_set``: one applied-weight code per system of bodies, inferred from its observed window.

Layout (as in ``nbody``): input ``(M, W, F)``, ``M`` bodies (padded ones have ``x_mask == 0``),
``W`` past states of ``F`` features (positions first); target ``(M, D)``, the next change of the
first ``D`` features (in the task's units).

A system's dynamics are read as one linear map from per-body content to per-body change,
composed from atoms and shared by all bodies and steps of the system::

    change_it  ~=  W*(g) z_it = U (g ⊙ S^T z_it)          (one code g per system)

``z_it = BodyEncoder(x)_it`` is a learned content encoder (``hebbnets.tasks.nbody_windows``). The
rows of the system's energy are bodies x transitions: the ``W - 1`` changes observed in the
window (standardised per feature by their std over the training part of the split) and, in
training, the target row (the target standardised likewise), with padded bodies masked out::

    F(g) = beta/2 sum_rows ||target_r - U (g ⊙ S^T z_r)||^2 + lam ||g||_1

Training: infer ``g`` with every row clamped (``AppliedAtomStack`` FISTA); the atoms follow
Atomic-Hebb (a ``training`` callback after each step) and the encoder follows Adam on ``F`` at
the inferred code (Danskin: the gradient of ``min_g F``), through the one gradient loop
(``hebbnets.training``: validation carved from training, patience, best state kept).
Prediction: clamp the observed window only, infer ``g`` (l1 weight ``test_lam``), read the
change of every body from its last state's content and put it back in the target's units.

Hand-engineered (the model is not told which laws act, nor how strongly): one code per system
(the laws are system-wide), rows = bodies x transitions, the body-set encoder's structure
(positions only as differences, pairwise terms summed over the other bodies), each step's content
from that step's state only, and the two per-feature standardisations (window changes and
targets), which assume the change over the window is distributed like the next one.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._model import DataSpec
from .._split import Split
from .._validation import check_choice, check_int, check_positive
from ..models import register
from ..tasks.nbody_windows import Standardise, body_mask, body_set_encoder, window_rows
from ..training import BackpropModel, Callback, TrainConfig
from ._fit import lam_for
from .applied import NORM_POLICIES, AppliedAtomStack, AppliedInference


@dataclass
class AppliedSetConfig(TrainConfig):
    """Configuration of ``vn_applied_set`` (module docstring); the optimisation fields
    (``lr``, ``epochs``, ``patience``, ...) train the content encoder.

    Attributes:
        atoms: ``K``; content: encoder output size ``n``; hidden: encoder MLP width.
        position_dims: leading input features that are positions.
        lam, test_lam: l1 weight in training and at prediction (``None``: ``lam``).
        beta: precision of the clamped rows (scales the energy against ``lam``).
        nonneg: codes ``>= 0``. max_iter, tol: FISTA budget per inference.
        rho_u, rho_s: Atomic-Hebb rates. norm_policy, reseed_after: as in ``vn_applied``.
        train_rows: ``"all"`` infers the training code from every row (the VN's clamped phase),
            ``"window"`` from the window rows only (as at prediction; the target row then only
            enters the learning signal).
    """

    lr: float = 3e-3  # encoder learning rate (lam and lr: the best of a 1-seed nbody validation probe)
    atoms: int = 64
    content: int = 32
    hidden: int = 64
    position_dims: int = 2
    lam: float = 0.1
    test_lam: float | None = None
    beta: float = 1.0
    nonneg: bool = False
    max_iter: int = 100
    tol: float = 1e-4
    rho_u: float = 0.05
    rho_s: float = 0.05
    norm_policy: str = "unit"
    reseed_after: int = 50
    train_rows: str = "all"

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("atoms", "content", "hidden", "position_dims", "max_iter"):
            check_int(getattr(self, name), name)
        check_int(self.reseed_after, "reseed_after", minimum=0)
        for name in ("lam", "beta", "rho_u", "rho_s"):
            check_positive(getattr(self, name), name, allow_zero=True)
        if self.test_lam is not None:
            check_positive(self.test_lam, "test_lam", allow_zero=True)
        check_positive(self.tol, "tol")
        check_choice(self.norm_policy, NORM_POLICIES, "norm_policy")
        check_choice(self.train_rows, ("all", "window"), "train_rows")


class _AtomicHebb(Callback):
    """Atomic-Hebb on the atoms after every optimiser step, from the inference of that step."""

    def on_step_end(self, model, step, batch, loss):
        cfg = model.config
        model.stack.atomic_hebb(model.last_inference, cfg.rho_u, cfg.rho_s, 0.0, cfg.norm_policy, cfg.reseed_after)


@register("vn_applied_set")
class AppliedSetVN(BackpropModel):
    """Set-level applied-weight Vector Network (module docstring)."""

    Config = AppliedSetConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        self.d, self.encoder = body_set_encoder(spec, "vn_applied_set", cfg.content, cfg.hidden, cfg.position_dims)
        self.stack = AppliedAtomStack((cfg.content, self.d), (cfg.atoms,), beta=cfg.beta, lam=cfg.lam,
                                      nonneg=cfg.nonneg, max_iter=cfg.max_iter, tol=cfg.tol)
        self.register_buffer("change_std", torch.ones(self.d))  # (D,) window changes
        self.register_buffer("target_std", torch.ones(self.d))  # (D,) targets
        self.register_buffer("standardised", torch.zeros((), dtype=torch.bool))
        self.last_inference: AppliedInference | None = None

    def training_callbacks(self) -> list[Callback]:
        return [Standardise(), _AtomicHebb()]

    # -- rows ---------------------------------------------------------------------------------------
    def _rows(self, x: torch.Tensor, x_mask: torch.Tensor | None, y: torch.Tensor | None):
        """Content rows ``(B, R, n)``, targets ``(B, R, D)``, row mask ``(B, R)`` of the window
        (and of the target row when ``y`` is given), and the last step's content ``(B, M, n)``."""
        body = body_mask(x, x_mask)  # (B, M)
        z = self.encoder(x, body)  # (B, M, W, n)
        zw, tw, mw = window_rows(z, x, body, self.change_std)
        if y is None:
            return zw, tw, mw, z[:, :, -1]
        return (torch.cat([zw, z[:, :, -1]], 1), torch.cat([tw, y / self.target_std], 1),
                torch.cat([mw, body], 1), z[:, :, -1])

    def _loss(self, batch: Split) -> torch.Tensor:
        """The free energy at the inferred code (differentiable in the encoder only)."""
        zr, tr, mr, _ = self._rows(batch.x, batch.x_mask, batch.y)
        with torch.no_grad():
            if self.config.train_rows == "all":
                inf = self.stack.infer(zr.detach(), y=tr, y_mask=mr)
            else:
                n_win = zr.shape[1] - batch.x.shape[1]
                g = self.stack.infer(zr[:, :n_win].detach(), y=tr[:, :n_win], y_mask=mr[:, :n_win]).codes
                inf = AppliedInference(codes=g, z=zr.detach(), c=None, y=tr, c_mask=None, y_mask=mr[..., None],
                                       energy=zr.new_zeros(len(zr)), iterations=0, sweeps=0, converged=True)
        self.last_inference = inf
        return self.stack.energy_of(inf.codes, zr, y=tr, y_mask=mr[..., None]).mean()

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        cfg = self.config
        zw, tw, mw, z_last = self._rows(x, x_mask, None)
        lam = lam_for(cfg, "predict")
        inf = self.stack.infer(zw, y=tw, y_mask=mw, lam=lam)
        change = self.stack.output(inf.codes, z_last)  # (B, M, D) standardised
        return change * self.target_std * body_mask(x, x_mask)[..., None]


__all__ = ["AppliedSetConfig", "AppliedSetVN"]
