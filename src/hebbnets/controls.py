"""Same-structure controls for the Vector Network's matrix and applied-weight readings: the structure without the mechanism.

A VN reading can win a bench through VN's mechanism (a sparse code inferred per sample by
minimising the layer energy with FISTA, atoms learned by Atomic-Hebb) or only through the
structure it shares with the data: matrix atoms ``u_a v_b^T`` composed into the output
``U G V^T``. Each control keeps that structure and replaces one part of the mechanism, so a
reading is credited with its mechanism only when every control loses beyond its interval:

* ``matrix_code_ff`` (the code from a feed-forward network): the output is ``U G V^T`` with unit
  factor columns, exactly the parameterisation of ``vn_matrix`` (images) and of ``vn_pairs``'
  outputs (``spatial2d`` decode), but ``G`` ``(Ku, Kv)`` comes from an MLP encoder of the input,
  and encoder and factors train end to end by backprop on the supervised loss, with an optional l1
  penalty on ``G`` (``l1 = 0``: none). No inference, no Atomic-Hebb.
* ``vn_matrix_implicit`` (FISTA kept, Atomic-Hebb replaced): the code is ``vn_matrix``'s LASSO
  solution ``G*(x) = argmin_G 1/2 ||x - U G V^T||^2 + lam ||G||_1``, found by the same batched
  FISTA, but the factors learn by gradients of the reconstruction loss through the solution
  (``hebbnets.nn.MatrixAtomLayer``: implicit differentiation on the active set, never unrolled),
  with Adam, and the unit-norm policy after every step. Reconstruct tasks only (the energy is on
  the input image).
* ``applied_set_code_ff`` (nbody; the applied-weight reading ``vn_applied_set``): the same body
  encoder, atoms and output ``change_i = U (g ⊙ S^T z_i,last)`` (unit atom columns, the output in
  the standardised target units as ``vn_applied_set``'s), but the system's code ``g`` ``(K,)``
  comes from a feed-forward summary of its window (``set_mlp``'s: the mean over window rows of an
  MLP of ``[z_it, change_it]``, then an MLP to ``K``), and everything trains end to end by
  backprop, with an optional l1 penalty on ``g``. No inference, no Atomic-Hebb.
* ``applied_set_implicit`` (nbody; FISTA kept, Atomic-Hebb replaced): ``vn_applied_set``'s body
  encoder, atoms, window energy and output, the system's code ``g*`` the LASSO solution of the
  window rows ``argmin_g beta/2 sum_r ||t_r - U (g ⊙ S^T z_r)||^2 + lam ||g||_1`` (rows = bodies x
  observed transitions, as ``vn_applied_set`` infers at prediction), found by FISTA on the
  per-system Gram ``beta (U^T U) ⊙ sum_r a_r a_r^T`` (``a_r = S^T z_r``); atoms and encoder learn
  by Adam on the next-change error through the solution (``hebbnets.nn.implicit_lasso``: implicit
  differentiation on the active set, never unrolled). Training infers from the window rows as
  prediction does (the target is what the loss scores, so it cannot also be clamped into the code).
  One departure, as in task-driven dictionary learning (Mairal, Bach and Ponce 2012): an
  elastic-net term ``l2/2 ||g||^2``. A window has at most ``M (W-1) D`` equations (24-40 on
  nbody) for 64 atoms, so the plain LASSO's active set can outgrow its rank: the solution is then
  not unique, ``H_AA`` singular and its implicit gradient noise (measured: with ``l2 = 0`` the
  fit learned less than with the code's gradient cut off).
* ``applied_code_ff`` (mnist_comp transform; the single applied-weight reading ``vn_applied``):
  ``vn_applied``'s content / context split, the same context encoding (raw or its Gaussian tuning
  curves) and output ``y = U (g ⊙ S^T z)`` (``S`` unit columns, ``U`` free, as ``vn_applied``'s norm
  policy), but the code ``g`` ``(K,)`` comes from an MLP of the encoded context, everything trained
  end to end by backprop, with an optional l1 penalty on ``g``. No inference, no Atomic-Hebb.
* ``applied_implicit`` (mnist_comp transform; FISTA kept, Atomic-Hebb replaced): the same
  structure, the code ``g*`` ``vn_applied``'s prediction-time LASSO of the encoded context
  ``argmin_g alpha/2 ||c - C g||^2 + lam ||g||_1`` (``C`` unit columns), found by FISTA on the
  shared Gram ``alpha C^T C``; ``C``, ``S`` and ``U`` learn by Adam on the output error through the
  solution (``implicit_lasso``), with ``applied_set_implicit``'s elastic-net term ``l2/2 ||g||^2``:
  a context of ``p`` entries fixes at most ``p`` of ``K > p`` atoms, so without it ``H_AA`` can be
  singular.
* ``vector_code_ff`` (the vector reading ``vn``, one layer): ``vn``'s output ``U g`` over ``K``
  atoms (unit columns, so an l1 penalty cannot be escaped by growing them), the code ``g`` ``(K,)``
  from an MLP of the input (masked inputs: of ``[m ⊙ x, m]``), trained end to end by backprop,
  with an optional l1 penalty on ``g``. No inference, no Atomic-Hebb.
* ``vn_implicit`` (the vector reading; FISTA kept, Atomic-Hebb replaced): ``vn``'s prediction-time
  code ``g*(x) = argmin_g 1/2 ||m ⊙ (x - S g)||^2 + lam ||g||_1`` and output ``U g*``
  (``hebbnets.nn.VNLayer``: the same batched FISTA, ``S`` and ``U`` learned by Adam through the
  solution by implicit differentiation), from ``vn``'s data start, with ``vn``'s ``"clip_s"``
  policy on ``S`` after every step. ``vn`` clamps the target into its training code; here the code comes from the input
  alone, as at prediction, since the target is what the loss scores.
* dense codes (``lam -> 0`` in ``vn`` / ``vn_matrix`` / ``vn_pairs`` / ``vn_applied_set`` / ``vn_applied``)
  need no model: a spec variant.

All are ordinary ``BackpropModel``s (``hebbnets.training``): the same training loop, stopping rule
and validation carve as every baseline. The matrix controls flatten their inputs for the encoder,
need image targets ``(N, H, W)`` and refuse masked inputs and class labels with one ``ValueError``;
the two applied-set controls take ``nbody``'s body-window layout (padded bodies masked), checked as
``vn_applied_set`` checks it; the two applied controls ``vn_applied``'s layout (flattened input,
the last ``context_dims`` entries the context), real-valued targets, no masks; the two vector
controls flatten inputs and targets (optional input masks, real-valued targets).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ._model import DataSpec
from ._validation import check_choice, check_int, check_int_fields, check_positive
from .models import register
from .nn import MatrixAtomLayer, VNLayer, implicit_lasso
from .tasks.nbody_windows import (Standardise, body_mask, body_set_encoder, mlp, window_changes, window_rows,
                                  window_summary)
from .vn.applied_model import tuning_code
from .vn.fista import fista_gram
from .vn.network import atoms_from_data
from .training import BackpropModel, Callback, TrainConfig, supervised_loss


def _image_target(spec: DataSpec, model: str) -> tuple[int, int]:
    if spec.is_classification or len(spec.y_shape) != 2:
        raise ValueError(f"y: model {model!r} needs image targets (N, H, W), got per-sample shape {spec.y_shape}")
    if spec.x_masked:
        raise ValueError(f"x_mask: model {model!r} does not take masked inputs")
    return int(spec.y_shape[0]), int(spec.y_shape[1])


def unit_columns(w: torch.Tensor) -> torch.Tensor:
    """``w`` ``(d, K)`` with every column scaled to unit l2 norm (``vn_matrix``'s ``"unit"`` policy)."""
    return w / w.norm(dim=0, keepdim=True).clamp_min(1e-12)


@dataclass
class MatrixCodeFFConfig(TrainConfig):
    """``matrix_code_ff``: ``atoms_u`` / ``atoms_s`` factor columns of the output's rows (``U``
    ``(H, Ku)``) and columns (``V`` ``(W, Kv)``), as ``vn_matrix``'s ``atoms_u`` / ``atoms_s``;
    ``hidden``: the encoder's hidden width (0: a linear encoder); ``l1``: weight of the penalty
    ``l1 * mean_b ||G||_1 / (H W)`` added to the mean squared error (the VN energy's ``lam`` in
    these units is ``l1 / 2``); ``nonneg``: codes ``G >= 0`` (a ReLU), as ``vn_matrix``'s."""

    atoms_u: int = 28
    atoms_s: int = 28
    hidden: int = 256
    l1: float = 0.0
    nonneg: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self.atoms_u, "atoms_u")
        check_int(self.atoms_s, "atoms_s")
        check_int(self.hidden, "hidden", minimum=0)
        check_positive(self.l1, "l1", allow_zero=True)
        if not isinstance(self.nonneg, bool):
            raise ValueError(f"nonneg: expected True or False, got {self.nonneg!r}")


@register("matrix_code_ff")
class MatrixCodeFF(BackpropModel):
    """``y_hat = U G(x) V^T`` ``(N, H, W)`` with ``G(x) = encoder(flatten(x))`` ``(N, Ku, Kv)``
    and unit factor columns (module docstring): ``vn_matrix``'s output structure, trained by backprop."""

    Config = MatrixCodeFFConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        height, width = _image_target(spec, "matrix_code_ff")
        k = cfg.atoms_u * cfg.atoms_s
        layers = [nn.Linear(spec.x_dim, k)] if cfg.hidden == 0 else \
            [nn.Linear(spec.x_dim, cfg.hidden), nn.GELU(), nn.Linear(cfg.hidden, k)]
        self.encoder = nn.Sequential(nn.Flatten(), *layers)
        self.U = nn.Parameter(torch.randn(height, cfg.atoms_u))  # (H, Ku), normalised in use
        self.V = nn.Parameter(torch.randn(width, cfg.atoms_s))  # (W, Kv)

    def code(self, x: torch.Tensor) -> torch.Tensor:
        """The code ``G`` ``(N, Ku, Kv)`` of inputs ``x`` ``(N, *x_shape)`` (exact zeros where the
        ReLU cuts, with ``nonneg``)."""
        g = self.encoder(x).view(x.shape[0], self.config.atoms_u, self.config.atoms_s)
        return torch.relu(g) if self.config.nonneg else g

    def compose(self, g: torch.Tensor) -> torch.Tensor:
        """``U G V^T``: ``(N, Ku, Kv) -> (N, H, W)``."""
        return unit_columns(self.U) @ g @ unit_columns(self.V).T

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        if x_mask is not None:
            raise ValueError("x_mask: model 'matrix_code_ff' does not take masked inputs")
        return self.compose(self.code(x))

    def _loss(self, batch) -> torch.Tensor:
        g = self.code(batch.x)
        loss = supervised_loss(self.compose(g), batch, self.spec)
        if self.config.l1:
            loss = loss + self.config.l1 * g.abs().sum((1, 2)).mean() / self.spec.y_dim
        return loss


@dataclass
class MatrixImplicitConfig(TrainConfig):
    """``vn_matrix_implicit``: ``atoms_u``, ``atoms_s``, ``lam``, ``nonneg``, ``max_iter``, ``tol``
    as ``vn_matrix`` (the LASSO and its FISTA budget); ``lam`` holds at training and prediction."""

    atoms_u: int = 28
    atoms_s: int = 28
    lam: float = 0.02
    nonneg: bool = True
    max_iter: int = 200
    tol: float = 1e-4

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self.atoms_u, "atoms_u")
        check_int(self.atoms_s, "atoms_s")
        check_int(self.max_iter, "max_iter")
        check_positive(self.lam, "lam")
        check_positive(self.tol, "tol")
        if not isinstance(self.nonneg, bool):
            raise ValueError(f"nonneg: expected True or False, got {self.nonneg!r}")


class UnitFactors(Callback):
    """After every optimiser step, every factor column to unit norm: ``vn_matrix``'s ``"unit"``
    policy (without a bound, gradients escape the l1 penalty by growing the factors)."""

    def on_step_end(self, model, step, batch, loss) -> None:
        with torch.no_grad():
            for w in (model.layer.U, model.layer.S):
                w.copy_(unit_columns(w))


@register("vn_matrix_implicit")
class MatrixImplicit(BackpropModel):
    """``vn_matrix``'s inference (``G*(x)`` by FISTA) and output ``U G* S^T`` ``(N, H, W)``, its
    factors learned by Adam through the LASSO solution (module docstring)."""

    Config = MatrixImplicitConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        height, width = _image_target(spec, "vn_matrix_implicit")
        if tuple(spec.x_shape) != (height, width):
            raise ValueError(f"x: model 'vn_matrix_implicit' reconstructs its input image: needs x shaped like "
                             f"y {spec.y_shape}, got {spec.x_shape}")
        self.layer = MatrixAtomLayer((height, width), (cfg.atoms_u, cfg.atoms_s), cfg.lam, nonneg=cfg.nonneg,
                                     max_iter=cfg.max_iter, tol=cfg.tol)
        with torch.no_grad():
            for w in (self.layer.U, self.layer.S):
                w.copy_(unit_columns(w))

    def training_callbacks(self) -> list[Callback]:
        return [UnitFactors(), *super().training_callbacks()]

    def code(self, x: torch.Tensor) -> torch.Tensor:
        """The LASSO code ``G*`` ``(N, Ku, Ks)`` of images ``x`` ``(N, H, W)``."""
        return self.layer(x, return_code=True)[1]

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        if x_mask is not None:
            raise ValueError("x_mask: model 'vn_matrix_implicit' does not take masked inputs")
        return self.layer(x)


class _AppliedSetStructure(BackpropModel):
    """What both applied-weight controls share with ``vn_applied_set``: the body encoder, unit-column
    atoms ``S`` ``(n, K)`` and ``U`` ``(D, K)``, the two standardisations and the output
    ``U (g ⊙ S^T z_last)``. A subclass builds its code's own parts between ``_encoder`` and
    ``_atoms`` (the order parameters are drawn in) and supplies ``_parts``."""

    def _encoder(self, spec: DataSpec, name: str) -> None:
        cfg = self.config
        self.d, self.encoder = body_set_encoder(spec, name, cfg.content, cfg.hidden, cfg.position_dims)

    def _atoms(self) -> None:
        self.S = nn.Parameter(torch.randn(self.config.content, self.config.atoms))  # (n, K), unit columns in use
        self.U = nn.Parameter(torch.randn(self.d, self.config.atoms))  # (D, K)
        self.register_buffer("change_std", torch.ones(self.d))  # (D,) window changes
        self.register_buffer("target_std", torch.ones(self.d))  # (D,) targets
        self.register_buffer("standardised", torch.zeros((), dtype=torch.bool))

    def training_callbacks(self) -> list[Callback]:
        return [Standardise(), *super().training_callbacks()]

    def _parts(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(code ``g`` ``(B, K)``, last contents ``(B, M, n)``, body mask ``(B, M)``)."""
        raise NotImplementedError

    def code(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The code ``g`` ``(N, K)`` of each system's window ``x`` ``(N, M, W, F)``."""
        return self._parts(x, x_mask)[0]

    def compose(self, g: torch.Tensor, z_last: torch.Tensor) -> torch.Tensor:
        """``U (g ⊙ S^T z)`` in the target's units: ``(B, K)``, ``(B, M, n)`` -> ``(B, M, D)``."""
        return ((z_last @ unit_columns(self.S)) * g[:, None, :]) @ unit_columns(self.U).T * self.target_std

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        g, z_last, body = self._parts(x, x_mask)
        return self.compose(g, z_last) * body[..., None]


@dataclass
class AppliedSetCodeFFConfig(TrainConfig):
    """``applied_set_code_ff``: ``atoms``, ``content``, ``hidden``, ``position_dims`` as
    ``vn_applied_set``'s (``K``, the body encoder's output size and width, leading position
    features); ``summary``: size of the window summary the code is read from (as ``set_mlp``'s);
    ``l1``: weight of ``l1 * mean_b ||g||_1 / K`` added to the mean squared error (0: none);
    ``nonneg``: codes ``g >= 0`` (a ReLU)."""

    atoms: int = 64
    content: int = 32
    hidden: int = 64
    summary: int = 32
    position_dims: int = 2
    l1: float = 0.0
    nonneg: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("atoms", "content", "hidden", "summary", "position_dims"))
        check_positive(self.l1, "l1", allow_zero=True)
        if not isinstance(self.nonneg, bool):
            raise ValueError(f"nonneg: expected True or False, got {self.nonneg!r}")


@register("applied_set_code_ff")
class AppliedSetCodeFF(_AppliedSetStructure):
    """``change_i = U (g(window) ⊙ S^T z_i,last)`` ``(N, M, D)``: ``vn_applied_set``'s output
    structure with a feed-forward code, trained by backprop (module docstring)."""

    Config = AppliedSetCodeFFConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        self._encoder(spec, "applied_set_code_ff")
        self.phi_row = mlp(cfg.content + self.d, cfg.hidden, cfg.summary)
        self.phi_code = mlp(cfg.summary, cfg.hidden, cfg.atoms)
        self._atoms()

    def _parts(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        body = body_mask(x, x_mask)
        z = self.encoder(x, body)  # (B, M, W, n)
        h = window_summary(self.phi_row, z, window_changes(x, self.d) / self.change_std, body)
        g = self.phi_code(h)
        return (torch.relu(g) if self.config.nonneg else g), z[:, :, -1], body

    def _loss(self, batch) -> torch.Tensor:
        g, z_last, body = self._parts(batch.x, batch.x_mask)
        loss = supervised_loss(self.compose(g, z_last) * body[..., None], batch, self.spec)
        if self.config.l1:
            loss = loss + self.config.l1 * g.abs().sum(1).mean() / self.config.atoms
        return loss


@dataclass
class AppliedSetImplicitConfig(TrainConfig):
    """``applied_set_implicit``: ``atoms``, ``content``, ``hidden``, ``position_dims``, ``beta``,
    ``nonneg``, ``max_iter``, ``tol`` as ``vn_applied_set``'s; ``lam``: the l1 weight of the
    window LASSO, the same in training and at prediction (the code is inferred from the window rows
    in both, so there is no clamped phase for a second weight to belong to); ``l2``: the elastic-net
    term ``l2/2 ||g||^2`` that makes the code unique and differentiable (0: the plain LASSO)."""

    atoms: int = 64
    content: int = 32
    hidden: int = 64
    position_dims: int = 2
    lam: float = 0.05
    l2: float = 0.1
    beta: float = 0.5
    nonneg: bool = False
    max_iter: int = 100
    tol: float = 1e-4

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("atoms", "content", "hidden", "position_dims", "max_iter"))
        check_positive(self.lam, "lam")
        check_positive(self.l2, "l2", allow_zero=True)
        check_positive(self.beta, "beta")
        check_positive(self.tol, "tol")
        if not isinstance(self.nonneg, bool):
            raise ValueError(f"nonneg: expected True or False, got {self.nonneg!r}")


@register("applied_set_implicit")
class AppliedSetImplicit(_AppliedSetStructure):
    """``change_i = U (g* ⊙ S^T z_i,last)`` ``(N, M, D)`` with ``g*`` the LASSO code of the system's
    window (``vn_applied_set``'s energy and FISTA), its atoms and encoder learned by Adam through
    the solution (module docstring)."""

    Config = AppliedSetImplicitConfig

    def _build(self, spec: DataSpec) -> None:
        self._encoder(spec, "applied_set_implicit")
        self._atoms()

    def window_energy(self, g: torch.Tensor, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``F(g) = beta/2 sum_rows ||t_r - U (g ⊙ S^T z_r)||^2 + l2/2 ||g||^2 + lam ||g||_1``
        ``(N,)`` of codes ``g`` ``(N, K)`` on the window rows of ``x`` (``vn_applied_set``'s energy at
        prediction, plus the elastic-net term)."""
        body = body_mask(x, x_mask)
        zw, tw, mw = window_rows(self.encoder(x, body), x, body, self.change_std)
        pred = ((zw @ unit_columns(self.S)) * g[:, None, :]) @ unit_columns(self.U).T  # (N, R, D)
        misfit = (((pred - tw) * mw[..., None]) ** 2).sum((1, 2))
        cfg = self.config
        return 0.5 * cfg.beta * misfit + 0.5 * cfg.l2 * (g ** 2).sum(1) + cfg.lam * g.abs().sum(1)

    def _parts(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # the code g* carries its implicit gradient (to the encoder's rows, S and U)
        cfg = self.config
        body = body_mask(x, x_mask)
        z = self.encoder(x, body)  # (B, M, W, n)
        zw, tw, mw = window_rows(z, x, body, self.change_std)  # (B, R, n), (B, R, D), (B, R)

        def smooth_grad(g: torch.Tensor) -> torch.Tensor:  # beta sum_r m_r a_r ⊙ U^T (U (g ⊙ a_r) - t_r) + l2 g
            S, U = unit_columns(self.S), unit_columns(self.U)
            a = zw @ S  # (B, R, K): S^T z_r
            resid = ((a * g[:, None, :]) @ U.T - tw) * mw[..., None]  # (B, R, D)
            return cfg.beta * (a * (resid @ U)).sum(1) + cfg.l2 * g

        with torch.no_grad():  # the per-system Hessian beta (U^T U) ⊙ sum_r m_r a_r a_r^T + l2 I, linear term
            S, U = unit_columns(self.S), unit_columns(self.U)
            a = zw @ S
            am = a * mw[..., None]
            G = cfg.beta * (U.T @ U) * (am.transpose(1, 2) @ a)  # (B, K, K)
            G = G + cfg.l2 * torch.eye(cfg.atoms, dtype=G.dtype, device=G.device)
            b = cfg.beta * (am * (tw @ U)).sum(1)  # (B, K)
            codes = fista_gram(G, b, cfg.lam, max_iter=cfg.max_iter, tol=cfg.tol, nonneg=cfg.nonneg).codes
        g = implicit_lasso(codes, cfg.lam, smooth_grad, lambda: G, zw, self.S, self.U)
        return g, z[:, :, -1], body


# -- the vector reading (vn) ---------------------------------------------------------------------------
def _vector_data(spec: DataSpec, model: str) -> None:
    if spec.is_classification:
        raise ValueError(f"y: model {model!r} needs real-valued targets, got class labels")


@dataclass
class VectorCodeFFConfig(TrainConfig):
    """``vector_code_ff``: ``atoms``: ``K``, as ``vn``'s one layer; ``hidden``: the width of the
    encoder's two hidden GELU layers (0: a linear encoder); ``l1``: weight of ``l1 * mean_b ||g||_1 / K`` added to the
    mean squared error (0: none); ``nonneg``: codes ``g >= 0`` (a ReLU)."""

    atoms: int = 64
    hidden: int = 64
    l1: float = 0.0
    nonneg: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self.atoms, "atoms")
        check_int(self.hidden, "hidden", minimum=0)
        check_positive(self.l1, "l1", allow_zero=True)
        if not isinstance(self.nonneg, bool):
            raise ValueError(f"nonneg: expected True or False, got {self.nonneg!r}")


@register("vector_code_ff")
class VectorCodeFF(BackpropModel):
    """``y_hat = U g(x)`` ``(N, *y_shape)`` with ``g(x) = encoder(x)`` ``(N, K)`` and unit atom
    columns ``U`` ``(m, K)`` (module docstring): ``vn``'s output structure, trained by backprop."""

    Config = VectorCodeFFConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        _vector_data(spec, "vector_code_ff")
        n_in = spec.x_dim * (2 if spec.x_masked else 1)
        self.encoder = nn.Linear(n_in, cfg.atoms) if cfg.hidden == 0 else mlp(n_in, cfg.hidden, cfg.atoms)
        self.U = nn.Parameter(torch.randn(spec.y_dim, cfg.atoms))  # (m, K), unit columns in use

    def code(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The code ``g`` ``(N, K)`` of inputs ``x`` ``(N, *x_shape)`` (exact zeros where the ReLU
        cuts, with ``nonneg``); the missing entries of a masked input never reach it."""
        x = x.flatten(1)
        if self.spec.x_masked:
            m = torch.ones_like(x) if x_mask is None else x_mask.flatten(1)
            x = torch.cat([x * m, m], 1)
        g = self.encoder(x)
        return torch.relu(g) if self.config.nonneg else g

    def compose(self, g: torch.Tensor) -> torch.Tensor:
        """``U g``: ``(N, K) -> (N, *y_shape)``."""
        return (g @ unit_columns(self.U).T).reshape(g.shape[0], *self.spec.y_shape)

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        return self.compose(self.code(x, x_mask))

    def _loss(self, batch) -> torch.Tensor:
        g = self.code(batch.x, batch.x_mask)
        loss = supervised_loss(self.compose(g), batch, self.spec)
        if self.config.l1:
            loss = loss + self.config.l1 * g.abs().sum(1).mean() / self.config.atoms
        return loss


@dataclass
class VectorImplicitConfig(TrainConfig):
    """``vn_implicit``: ``atoms``, ``lam``, ``nonneg``, ``max_iter``, ``tol``, ``init`` as ``vn``'s
    one layer (the LASSO, its FISTA budget and the atoms' start: ``"data"`` random training pairs,
    ``hebbnets.vn.network.atoms_from_data``, ``"random"`` Gaussian); ``lam`` holds at training and
    prediction."""

    atoms: int = 64
    lam: float = 0.05
    nonneg: bool = False
    max_iter: int = 200
    tol: float = 1e-4
    init: str = "data"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("atoms", "max_iter"))
        check_positive(self.lam, "lam")
        check_positive(self.tol, "tol")
        check_choice(self.init, ("data", "random"), "init")
        if not isinstance(self.nonneg, bool):
            raise ValueError(f"nonneg: expected True or False, got {self.nonneg!r}")


class DataAtoms(Callback):
    """Before a model's first fit (never a ``partial_fit``, which continues from its atoms): ``vn``'s
    data start, ``S`` and ``U`` from random training pairs (``atoms_from_data``) on the training part."""

    def on_fit_start(self, model, train, val) -> None:
        if bool(model.initialised):
            return
        with torch.no_grad():
            S, U = atoms_from_data(train, model.config.atoms, model.seed, model.layer.S.dtype)
            model.layer.S.copy_(S)
            model.layer.U.copy_(U)
        model.initialised.fill_(True)


class ClipInputAtoms(Callback):
    """After every optimiser step, every input atom ``s_k`` longer than 1 back to unit norm:
    ``vn``'s ``"clip_s"`` policy (without a bound, gradients escape the l1 penalty by growing ``S``)."""

    def on_step_end(self, model, step, batch, loss) -> None:
        with torch.no_grad():
            S = model.layer.S
            S.div_(S.norm(dim=0, keepdim=True).clamp_min(1.0))


@register("vn_implicit")
class VectorImplicit(BackpropModel):
    """``vn``'s one-layer inference (``g*(x)`` by FISTA on the observed entries) and output ``U g*``
    ``(N, *y_shape)``, its atoms learned by Adam through the LASSO solution (module docstring)."""

    Config = VectorImplicitConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        _vector_data(spec, "vn_implicit")
        self.layer = VNLayer(spec.x_dim, spec.y_dim, cfg.atoms, cfg.lam, nonneg=cfg.nonneg, max_iter=cfg.max_iter,
                             tol=cfg.tol)
        self.register_buffer("initialised", torch.tensor(cfg.init == "random"))  # "data": set by DataAtoms

    def training_callbacks(self) -> list[Callback]:
        return [DataAtoms(), ClipInputAtoms(), *super().training_callbacks()]

    def _layer(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        return self.layer(x.flatten(1), None if x_mask is None else x_mask.flatten(1), return_code=True)

    def code(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The LASSO code ``g*`` ``(N, K)`` of inputs ``x`` ``(N, *x_shape)`` on their observed entries."""
        return self._layer(x, x_mask)[1]

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        return self._layer(x, x_mask)[0].reshape(x.shape[0], *self.spec.y_shape)


# -- the single applied-weight reading (vn_applied) -------------------------------------------------
@dataclass
class _AppliedFields(TrainConfig):
    """Fields both applied controls share with ``vn_applied``: ``atoms`` (``K``), ``context_dims``
    (trailing input entries that are the context), ``context_encoding`` (``"raw"`` or ``"tuning"``),
    ``tuning_points``, ``nonneg`` (codes ``g >= 0``)."""

    atoms: int = 256
    context_dims: int = 1
    context_encoding: str = "raw"
    tuning_points: int = 9
    nonneg: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_fields(self, ("atoms", "context_dims"))
        check_int(self.tuning_points, "tuning_points", minimum=2)
        check_choice(self.context_encoding, ("raw", "tuning"), "context_encoding")
        if not isinstance(self.nonneg, bool):
            raise ValueError(f"nonneg: expected True or False, got {self.nonneg!r}")


class _AppliedStructure(BackpropModel):
    """``vn_applied``'s structure: content ``z`` ``(B, n)`` and encoded context ``c`` ``(B, p)`` from
    the flattened input, atoms ``S`` ``(n, K)`` (unit columns in use) and ``U`` ``(m, K)``, output
    ``U (g ⊙ S^T z)``. A subclass adds its code's parts after ``_structure`` and defines ``code``."""

    def _structure(self, spec: DataSpec, name: str) -> int:
        """Check the layout, draw ``S`` and ``U``; returns the encoded context size ``p``."""
        cfg = self.config
        if spec.is_classification:
            raise ValueError(f"split: {name!r} predicts real-valued targets; got integer class labels")
        if spec.x_masked:
            raise ValueError(f"x_mask: model {name!r} takes no input mask")
        n = spec.x_dim - cfg.context_dims
        if n < 1:
            raise ValueError(f"context_dims: {cfg.context_dims} leaves no content in inputs of {spec.x_dim} entries")
        self.S = nn.Parameter(torch.randn(n, cfg.atoms) / n**0.5)  # (n, K), unit columns in use
        self.U = nn.Parameter(torch.randn(spec.y_dim, cfg.atoms) / spec.y_dim**0.5)  # (m, K), free scale
        return cfg.context_dims * (1 if cfg.context_encoding == "raw" else cfg.tuning_points)

    def split_input(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(N, *x_shape)`` -> content ``(N, n)`` and encoded context ``(N, p)`` (``vn_applied``'s)."""
        cfg = self.config
        flat = x.reshape(x.shape[0], -1)
        z, c = flat[:, : -cfg.context_dims], flat[:, -cfg.context_dims:]
        return z, (c if cfg.context_encoding == "raw" else tuning_code(c, cfg.tuning_points))

    def code(self, x: torch.Tensor) -> torch.Tensor:
        """The code ``g`` ``(N, K)`` of inputs ``x`` ``(N, *x_shape)`` (read from the context only)."""
        raise NotImplementedError

    def compose(self, g: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``U (g ⊙ S^T z)``: ``(B, K)``, ``(B, n)`` -> ``(B, m)``."""
        return ((z @ unit_columns(self.S)) * g) @ self.U.T

    def _forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        if x_mask is not None:
            raise ValueError(f"x_mask: model {self.name!r} takes no input mask")
        z, _ = self.split_input(x)
        return self.compose(self.code(x), z).reshape(x.shape[0], *self.spec.y_shape)


@dataclass
class AppliedCodeFFConfig(_AppliedFields):
    """``applied_code_ff``: ``vn_applied``'s fields (``_AppliedFields``); ``hidden``: the width of the
    code network's two hidden GELU layers (0: one linear map); ``l1``: weight of ``l1 * mean_b ||g||_1 / K`` added to the
    mean squared error (0: none)."""

    hidden: int = 256
    l1: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self.hidden, "hidden", minimum=0)
        check_positive(self.l1, "l1", allow_zero=True)


@register("applied_code_ff")
class AppliedCodeFF(_AppliedStructure):
    """``y = U (g(c) ⊙ S^T z)`` with the code from an MLP of the encoded context, trained by
    backprop (module docstring)."""

    Config = AppliedCodeFFConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        p = self._structure(spec, "applied_code_ff")
        self.code_net = nn.Linear(p, cfg.atoms) if cfg.hidden == 0 else mlp(p, cfg.hidden, cfg.atoms)

    def code(self, x: torch.Tensor) -> torch.Tensor:
        g = self.code_net(self.split_input(x)[1])
        return torch.relu(g) if self.config.nonneg else g

    def _loss(self, batch) -> torch.Tensor:
        z, _ = self.split_input(batch.x)
        g = self.code(batch.x)
        loss = supervised_loss(self.compose(g, z).reshape(batch.y.shape), batch, self.spec)
        if self.config.l1:
            loss = loss + self.config.l1 * g.abs().sum(1).mean() / self.config.atoms
        return loss


@dataclass
class AppliedImplicitConfig(_AppliedFields):
    """``applied_implicit``: ``vn_applied``'s fields (``_AppliedFields``); ``alpha`` (context
    precision), ``lam`` (the l1 weight, in training and at prediction: the code is always inferred
    from the context alone, as ``vn_applied``'s with ``train_codes="context"``), ``max_iter``,
    ``tol`` as ``vn_applied``'s; ``l2``: the elastic-net term ``l2/2 ||g||^2`` (0: plain LASSO)."""

    alpha: float = 1.0
    lam: float = 0.005
    l2: float = 0.1
    max_iter: int = 100
    tol: float = 1e-4

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self.max_iter, "max_iter")
        check_positive(self.alpha, "alpha")
        check_positive(self.lam, "lam")
        check_positive(self.l2, "l2", allow_zero=True)
        check_positive(self.tol, "tol")


@register("applied_implicit")
class AppliedImplicit(_AppliedStructure):
    """``y = U (g*(c) ⊙ S^T z)`` with ``g*`` the LASSO code of the encoded context, ``C``, ``S``,
    ``U`` learned by Adam through the solution (module docstring)."""

    Config = AppliedImplicitConfig

    def _build(self, spec: DataSpec) -> None:
        p = self._structure(spec, "applied_implicit")
        self.C = nn.Parameter(torch.randn(p, self.config.atoms) / p**0.5)  # (p, K), unit columns in use

    def context_energy(self, g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``alpha/2 ||c - C g||^2 + l2/2 ||g||^2 + lam ||g||_1`` ``(N,)`` of codes ``g`` ``(N, K)``
        for inputs ``x`` (what ``code`` minimises)."""
        cfg = self.config
        c = self.split_input(x)[1]
        misfit = ((c - g @ unit_columns(self.C).T) ** 2).sum(1)
        return 0.5 * cfg.alpha * misfit + 0.5 * cfg.l2 * (g ** 2).sum(1) + cfg.lam * g.abs().sum(1)

    def code(self, x: torch.Tensor) -> torch.Tensor:
        # the code g* carries its implicit gradient to C
        cfg = self.config
        c = self.split_input(x)[1]

        def smooth_grad(g: torch.Tensor) -> torch.Tensor:  # alpha C^T (C g - c) + l2 g
            C = unit_columns(self.C)
            return cfg.alpha * ((g @ C.T - c) @ C) + cfg.l2 * g

        with torch.no_grad():  # the shared Hessian alpha C^T C + l2 I and the linear term alpha C^T c
            C = unit_columns(self.C)
            G = cfg.alpha * (C.T @ C) + cfg.l2 * torch.eye(cfg.atoms, dtype=C.dtype, device=C.device)
            codes = fista_gram(G, cfg.alpha * (c @ C), cfg.lam, max_iter=cfg.max_iter, tol=cfg.tol,
                               nonneg=cfg.nonneg).codes
        return implicit_lasso(codes, cfg.lam, smooth_grad, lambda: G, self.C)


__all__ = ["AppliedCodeFF", "AppliedCodeFFConfig", "AppliedImplicit", "AppliedImplicitConfig", "AppliedSetCodeFF", "AppliedSetCodeFFConfig", "AppliedSetImplicit", "AppliedSetImplicitConfig", "MatrixCodeFF", "MatrixCodeFFConfig", "MatrixImplicit",
           "MatrixImplicitConfig", "UnitFactors", "unit_columns"]
