"""Pair atoms: decoding factor codes into matrices inside VN (no hand-made product).

Atoms are indexed by pairs ``(a, b)``, ``a < Ka``, ``b < Kb``. The input-side code vector of
atom ``(a, b)`` is built from shared per-factor codes, ``[p_a; q_b]`` (``P`` ``(n_a, Ka)``,
``Q`` ``(n_b, Kb)``), and its output is the rank-1 matrix ``u_a v_b^T`` (``U`` ``(m, Ka)``,
``V`` ``(n, Kb)``). A sample's code is a sparse matrix ``G`` ``(Ka, Kb)``::

    x_hat(G) = [P G 1; Q G^T 1]      input reconstruction: row sums weigh p_a, column sums q_b
    y_hat(G) = U G V^T               output: the composed matrix (as ``MatrixAtomLayer``)
    F(G) = 1/2 ||m_x * (x - x_hat(G))||^2 + beta/2 ||m_y * (y - U G V^T)||^2 + lam ||G||_1

(the ``beta`` term only while the target is clamped in training; at prediction ``G`` is
inferred from the input alone and the output read as ``U G V^T``). For an input
``[onehot(cx); onehot(cy)]`` and factors ``p_a = e_cx``, ``q_b = e_cy``, the sparsest exact
explanation is the single atom ``(a, b)`` (its row and column sums are exactly the two one-hot
halves), even when that pair was never active in training: every factor of it was learned from
other pairs. It competes with pairs of half-explaining atoms ``(a, b'), (a', b)``;
``pair_atom_choice`` measures which one inference picks.

Nothing here multiplies a row code by a column code by construction: ``G`` is a free sparse
code over all pairs, found by FISTA, and ``P, Q, U, V`` are learned by Atomic-Hebb (the Danskin
gradient of ``F``)::

    P += rho_in  R_a r^T,   Q += rho_in  R_b c^T          (r = G 1, c = G^T 1; R_x = m_x * (x - x_hat))
    U += rho_out R_y V G^T, V += rho_out R_y^T U G        (R_y = beta m_y * (y - U G V^T))

(batch means). A readout that forms ``row_code x col_code`` by hand is the hand-factorised
decoder (``hebbnets.baselines``' ``factorized``), not this model.

Inference runs ``hebbnets.vn.fista`` with the Hessian as an operator::

    H(G) = (P^T m P) r 1^T + 1 ((Q^T m Q) c)^T + beta U^T (m_y * U G V^T) V

and the Lipschitz bound ``Kb lambda_max(P^T P) + Ka lambda_max(Q^T Q) + beta lambda_max(U^T U)
lambda_max(V^T V)`` (``||P G 1||^2 <= lambda_max(P^T P) Kb ||G||_F^2``; masks only lower it).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .._model import DataSpec, Model
from .._split import Split
from .._validation import check_choice, check_int
from ..models import register
from ._fit import LocalFitConfig, fit_local
from .fista import FistaResult, fista, kkt_violation
from .matrix import NORM_POLICIES, MatrixAtomLayer, _top_eigenvalue, check_sparse_code_fields


def _check_tensor(t, name: str, shape: tuple[int, ...]) -> None:
    if not isinstance(t, torch.Tensor) or not torch.is_floating_point(t):
        raise ValueError(f"{name}: expected a float tensor (B, {', '.join(map(str, shape))})")
    if t.ndim != len(shape) + 1 or tuple(t.shape[1:]) != shape or t.shape[0] == 0:
        raise ValueError(f"{name}: expected shape (B, {', '.join(map(str, shape))}) with B >= 1, got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name}: contains NaN or Inf")


class PairAtomLayer(nn.Module):
    """Pair atoms (module docstring): ``P`` ``(n_a, Ka)``, ``Q`` ``(n_b, Kb)`` on the input side,
    ``U`` ``(m, Ka)``, ``V`` ``(n, Kb)`` on the output side (``self.out``, a ``MatrixAtomLayer``).
    The input is ``x = [x_a; x_b]`` ``(B, n_a + n_b)``; codes ``G`` ``(B, Ka, Kb)``; the output
    ``(B, m, n)``. All four libraries are learned by Atomic-Hebb (``requires_grad=False``).
    ``fused``: FISTA's loop (``hebbnets.vn.fista.resolve_fused``), as on ``MatrixAtomLayer``.
    """

    fused: bool | str = "auto"

    def __init__(self, n_a: int, n_b: int, m: int, n: int, ka: int, kb: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        P, Q = torch.randn(n_a, ka, dtype=dtype), torch.randn(n_b, kb, dtype=dtype)
        self.P = nn.Parameter(P / P.norm(dim=0), requires_grad=False)  # (n_a, Ka)
        self.Q = nn.Parameter(Q / Q.norm(dim=0), requires_grad=False)  # (n_b, Kb)
        self.out = MatrixAtomLayer(m, n, ka, kb, dtype)  # U = out.U (m, Ka), V = out.S (n, Kb)
        # batches since each factor's row (a) / column (b) of G was last non-zero (re-seeding)
        self.register_buffer("unused_a", torch.zeros(ka, dtype=torch.long))
        self.register_buffer("unused_b", torch.zeros(kb, dtype=torch.long))

    @property
    def U(self) -> nn.Parameter:
        return self.out.U

    @property
    def V(self) -> nn.Parameter:
        return self.out.S

    @property
    def code_shape(self) -> tuple[int, int]:
        return self.P.shape[1], self.Q.shape[1]

    @property
    def input_size(self) -> int:
        return self.P.shape[0] + self.Q.shape[0]

    # -- products ----------------------------------------------------------------------------------
    def reconstruct_input(self, codes: torch.Tensor) -> torch.Tensor:
        """``[P G 1; Q G^T 1]``: ``(B, Ka, Kb) -> (B, n_a + n_b)``."""
        return torch.cat([codes.sum(2) @ self.P.T, codes.sum(1) @ self.Q.T], dim=1)

    def correlate_input(self, x: torch.Tensor) -> torch.Tensor:
        """The adjoint: ``(P^T x_a) 1^T + 1 (Q^T x_b)^T``: ``(B, n_a + n_b) -> (B, Ka, Kb)``."""
        n_a = self.P.shape[0]
        return (x[:, :n_a] @ self.P)[:, :, None] + (x[:, n_a:] @ self.Q)[:, None, :]

    def output(self, codes: torch.Tensor) -> torch.Tensor:
        """``U G V^T``: ``(B, Ka, Kb) -> (B, m, n)``."""
        return self.out.compose(codes)

    def hessian(self, x_mask: torch.Tensor | None, y_precision: torch.Tensor | float | None):
        """The LASSO's Hessian on ``(B, Ka, Kb)`` codes: the input part (row and column sums
        through ``P^T P`` and ``Q^T Q``; through the mask when given) plus the output part
        (``MatrixAtomLayer.hessian``; ``y_precision`` ``None`` = no clamped target)."""
        if x_mask is None:
            PtP, QtQ = self.P.T @ self.P, self.Q.T @ self.Q
            in_part = lambda G: (G.sum(2) @ PtP)[:, :, None] + (G.sum(1) @ QtQ)[:, None, :]  # noqa: E731
        else:
            in_part = lambda G: self.correlate_input(x_mask * self.reconstruct_input(G))  # noqa: E731
        if y_precision is None:
            return in_part
        out_part = self.out.hessian(y_precision)
        return lambda G: in_part(G) + out_part(G)  # noqa: E731

    def lipschitz(self, y_precision: torch.Tensor | float | None) -> torch.Tensor:
        """Upper bound of the Hessian's largest eigenvalue (module docstring); ``(B,)`` for a
        per-sample output precision."""
        ka, kb = self.code_shape
        bound = kb * _top_eigenvalue(self.P.T @ self.P) + ka * _top_eigenvalue(self.Q.T @ self.Q)
        if y_precision is None:
            return bound
        return bound + self.out.lipschitz(y_precision)

    # -- inference ---------------------------------------------------------------------------------
    def _output_terms(self, y, y_mask, beta):
        """``(precision, precision * y)`` of the output term, or ``(None, None)`` if not clamped."""
        if y is None or beta == 0:
            return None, None
        precision = beta if y_mask is None else beta * y_mask
        return precision, precision * y

    @torch.no_grad()
    def infer(self, x: torch.Tensor, y: torch.Tensor | None = None, x_mask: torch.Tensor | None = None,
              y_mask: torch.Tensor | None = None, *, lam: float, beta: float = 1.0, nonneg: bool = False,
              topk: int = 0, max_iter: int = 200, tol: float = 1e-4, g0: torch.Tensor | None = None) -> FistaResult:
        """Sparse pair codes of a batch (module docstring).

        Args:
            x: ``(B, n_a + n_b)`` input; y: optional ``(B, m, n)`` target clamped with precision
                ``beta``; x_mask: optional ``(B, n_a + n_b)``, y_mask: optional ``(B, m, n)``
                0/1 masks.
            lam, nonneg, topk, max_iter, tol, g0: as in ``MatrixAtomLayer.infer``.
        Returns:
            ``FistaResult`` with codes ``(B, Ka, Kb)``.
        """
        self.check_inputs(x, y, x_mask, y_mask)
        dt = self.P.dtype
        cast = lambda t: None if t is None else t.to(dt)  # noqa: E731
        x, y, x_mask, y_mask = cast(x), cast(y), cast(x_mask), cast(y_mask)
        b = self.correlate_input(x if x_mask is None else x_mask * x)
        y_prec, y_weighted = self._output_terms(y, y_mask, beta)
        if y_prec is not None:
            b = b + self.out.correlate(y_weighted)
        return fista(self.hessian(x_mask, y_prec), b, lam, self.lipschitz(y_prec), g0=g0, max_iter=max_iter,
                     tol=tol, nonneg=nonneg, topk=topk, fused=self.fused)

    def check_inputs(self, x, y=None, x_mask=None, y_mask=None) -> None:
        """One ``ValueError`` naming the first bad argument (shapes, dtype, NaN/Inf)."""
        m, n = self.out.image_shape
        _check_tensor(x, "x", (self.input_size,))
        for name, t, shape in (("y", y, (m, n)), ("x_mask", x_mask, (self.input_size,)), ("y_mask", y_mask, (m, n))):
            if t is not None:
                _check_tensor(t, name, shape)
                if t.shape[0] != x.shape[0]:
                    raise ValueError(f"{name}: has {t.shape[0]} samples but x has {x.shape[0]}")

    def residuals(self, x, y, codes, x_mask=None, y_mask=None, beta: float = 1.0):
        """Precision-weighted residuals ``(R_x (B, n_a + n_b), R_y (B, m, n) or None)``."""
        r_x = x - self.reconstruct_input(codes)
        if x_mask is not None:
            r_x = x_mask * r_x
        y_prec, _ = self._output_terms(y, y_mask, beta)
        r_y = None if y_prec is None else y_prec * (y - self.output(codes))
        return r_x, r_y

    def energy(self, x, codes, lam: float, y=None, x_mask=None, y_mask=None, beta: float = 1.0) -> torch.Tensor:
        """Free energy ``F`` ``(B,)`` from the un-expanded formula; differentiable in the four
        libraries at fixed codes."""
        r_x = x - self.reconstruct_input(codes)
        if x_mask is not None:
            r_x = x_mask * r_x
        F = 0.5 * (r_x**2).sum(-1) + lam * codes.abs().flatten(1).sum(-1)
        if y is not None and beta:
            r_y = y - self.output(codes)
            if y_mask is not None:
                r_y = y_mask * r_y
            F = F + 0.5 * beta * (r_y**2).flatten(1).sum(-1)
        return F

    def optimality_residual(self, x, codes, lam: float, y=None, x_mask=None, y_mask=None, beta: float = 1.0,
                            nonneg: bool = False) -> torch.Tensor:
        """KKT residual ``(B,)`` from the un-expanded gradient of ``F`` in ``G``."""
        r_x, r_y = self.residuals(x, y, codes, x_mask, y_mask, beta)
        d = -self.correlate_input(r_x)
        if r_y is not None:
            d = d - self.out.correlate(r_y)
        return kkt_violation(d, codes, lam, nonneg)

    # -- slow learning ---------------------------------------------------------------------------
    @torch.no_grad()
    def atomic_hebb(self, x, codes, y=None, x_mask=None, y_mask=None, *, beta: float = 1.0, rho_in: float,
                    rho_out: float, norm_policy: str = "unit", reseed_after: int = 0) -> dict[str, torch.Tensor]:
        """Atomic-Hebb on all four libraries from the same residuals (module docstring), then the
        norm policy on the *input-side* vectors of active rows (``P``) and columns (``Q``): the
        input scale fixes the code scale, the output vectors then carry the output's amplitude.
        With ``reseed_after > 0``, an input factor whose row (``p_a``) or column (``q_b``) of
        ``G`` stayed zero for that many consecutive batches is re-seeded (``_reseed``).

        Returns:
            ``{"P": dP, "Q": dQ, "U": dU, "V": dV}``, the raw updates (zeros for ``U``, ``V``
            when no target is clamped).
        """
        check_choice(norm_policy, NORM_POLICIES, "norm_policy")
        dt = self.P.dtype
        cast = lambda t: None if t is None else t.to(dt)  # noqa: E731
        x, y, x_mask, y_mask = cast(x), cast(y), cast(x_mask), cast(y_mask)
        B, n_a = codes.shape[0], self.P.shape[0]
        r_x, r_y = self.residuals(x, y, codes, x_mask, y_mask, beta)
        dP = rho_in * (r_x[:, :n_a].T @ codes.sum(2)) / B  # (n_a, Ka)
        dQ = rho_in * (r_x[:, n_a:].T @ codes.sum(1)) / B  # (n_b, Kb)
        if r_y is None:
            dU, dV = torch.zeros_like(self.U), torch.zeros_like(self.V)
        else:
            dir_u, dir_v = self.out.hebb_directions(r_y, codes)
            dU, dV = rho_out * dir_u, rho_out * dir_v
        self.P += dP
        self.Q += dQ
        self.U.add_(dU)  # properties of self.out: update in place
        self.V.add_(dV)
        active_a, active_b = self.out.active_vectors(codes)
        for L, active in ((self.P, active_a), (self.Q, active_b)):
            if norm_policy == "none" or rho_in == 0 or not bool(active.any()):  # rho 0: learning off
                continue
            idx = active.nonzero().squeeze(-1)
            norms = L[:, idx].norm(dim=0).clamp_min(1e-12)
            if norm_policy == "clip":
                norms = norms.clamp_min(1.0)
            L[:, idx] = L[:, idx] / norms
        self.unused_a = torch.where(active_a, 0, self.unused_a + 1)
        self.unused_b = torch.where(active_b, 0, self.unused_b + 1)
        if reseed_after:
            self._reseed(self.P, self.unused_a, r_x[:, :n_a], reseed_after)
            self._reseed(self.Q, self.unused_b, r_x[:, n_a:], reseed_after)
        return {"P": dP, "Q": dQ, "U": dU, "V": dV}

    @staticmethod
    def _reseed(L: torch.Tensor, unused: torch.Tensor, residual: torch.Tensor, after: int) -> None:
        """**(choice)** Point dead input factors at the batch's worst-explained input halves
        (normalised residuals, one sample per factor), as ``VectorNetwork`` re-seeds dead atoms."""
        dead = (unused >= after).nonzero().squeeze(-1)
        if len(dead) == 0:
            return
        err = (residual**2).sum(-1)  # (B,)
        worst = err.argsort(descending=True)[: len(dead)]
        worst = worst[err[worst] > 0]
        dead = dead[: len(worst)]
        L[:, dead] = (residual[worst] / residual[worst].norm(dim=-1, keepdim=True)).T
        unused[dead] = 0


# -- the registered model ----------------------------------------------------------------------
@dataclass
class PairVNConfig(LocalFitConfig):
    """Configuration of ``PairVN`` (``"vn_pairs"``; the shared fields: ``LocalFitConfig``).

    Attributes:
        atoms_a, atoms_b: ``Ka`` and ``Kb`` per-factor codes (``Ka * Kb`` pair atoms).
        input_split: length ``n_a`` of the first input factor (0: half of the input).
        lam: l1 weight during training; test_lam: at prediction (``None``: ``lam``).
        beta: precision of the clamped target in training.
        topk: at most ``k`` non-zero pair codes per sample in training (0 = off); test_topk: at
            prediction (``None``: ``topk``); nonneg: codes >= 0.
        max_iter, tol: FISTA budget and tolerance.
        rho_in, rho_out: Atomic-Hebb rates of the input (``P``, ``Q``) and output (``U``, ``V``)
            libraries.
        norm_policy: ``"unit"``, ``"clip"`` or ``"none"`` for the input-side vectors.
        reseed_after: re-seed an input factor unused for this many consecutive batches (0 = never).
        epochs, batch_size, val_fraction, patience: the VN training loop (``vn._fit``).
        progress: progress bar; dtype: ``"float32"`` or ``"float64"``.

    **(choice)** Defaults: training infers a hard top-1 code (competitive learning: each
    sample updates one factor per side, so duplicated factors die and are re-seeded), with
    the target clamped weakly (``beta = 0.1``, so training codes are chosen almost as at
    prediction; ``rho_out = 10`` keeps the effective output rate ``beta rho_out = 1``);
    prediction solves the plain non-negative LASSO (``test_topk = 0``), so whether it picks
    the single pair atom is measured, not imposed (``pair_atom_choice``).
    """

    atoms_a: int = 28
    atoms_b: int = 28
    input_split: int = 0
    beta: float = 0.1
    topk: int = 1
    test_topk: int | None = 0
    nonneg: bool = True
    max_iter: int = 200
    tol: float = 1e-4
    rho_in: float = 1.0
    rho_out: float = 10.0
    norm_policy: str = "unit"
    reseed_after: int = 10
    batch_size: int = 32

    def __post_init__(self) -> None:
        super().__post_init__()
        check_sparse_code_fields(self, atoms=("atoms_a", "atoms_b"), rates=("rho_in", "rho_out"))
        check_int(self.input_split, "input_split", minimum=0)
        check_int(self.reseed_after, "reseed_after", minimum=0)
        if self.test_topk is not None:
            check_int(self.test_topk, "test_topk", minimum=0)


@register("vn_pairs")
class PairVN(Model):
    """Decode a two-factor input (e.g. ``[onehot(cx); onehot(cy)]``) into a matrix with pair
    atoms (module docstring). Inputs ``(N, n_a + n_b)``, targets ``(N, m, n)``."""

    Config = PairVNConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        if spec.is_classification:
            raise ValueError("split: vn_pairs decodes into real-valued matrices; got integer class labels")
        if len(spec.x_shape) != 1 or spec.x_shape[0] < 2:
            raise ValueError(f"split: vn_pairs needs vector inputs (N, n_a + n_b); got per-sample shape {spec.x_shape}")
        if len(spec.y_shape) != 2:
            raise ValueError(f"split: vn_pairs needs matrix targets (N, m, n); got per-sample shape {spec.y_shape}")
        n_in = spec.x_shape[0]
        n_a = cfg.input_split or n_in // 2
        if not 0 < n_a < n_in:
            raise ValueError(f"input_split: must be in (0, {n_in}) for inputs of size {n_in}, got {cfg.input_split}")
        self.layer = PairAtomLayer(n_a, n_in - n_a, *spec.y_shape, cfg.atoms_a, cfg.atoms_b, getattr(torch, cfg.dtype))

    def infer(self, x, y=None, x_mask=None, y_mask=None, lam: float | None = None,
              topk: int | None = None) -> FistaResult:
        """Pair codes ``(B, Ka, Kb)`` for inputs ``x`` ``(B, n_a + n_b)`` (and a clamped target
        ``y`` ``(B, m, n)`` in training); ``lam``/``topk`` default to the training values. See
        ``PairAtomLayer.infer``."""
        self.require_built()
        cfg = self.config
        return self.layer.infer(x, y, x_mask, y_mask, lam=cfg.lam if lam is None else lam, beta=cfg.beta,
                                nonneg=cfg.nonneg, topk=cfg.topk if topk is None else topk, max_iter=cfg.max_iter,
                                tol=cfg.tol)

    def _fit(self, split: Split) -> None:
        cfg = self.config
        dt = self.layer.P.dtype
        cast = lambda t: None if t is None else t.to(dt)  # noqa: E731
        x, y, xm, ym = cast(split.x), cast(split.y), cast(split.x_mask), cast(split.y_mask)
        pick = lambda t, i: None if t is None else t[i]  # noqa: E731

        def learn_batch(i: torch.Tensor) -> float:
            args = (x[i], y[i], pick(xm, i), pick(ym, i))
            codes = self.infer(*args).codes
            energy = float(self.layer.energy(args[0], codes, cfg.lam, args[1], args[2], args[3], cfg.beta).sum())
            self.layer.atomic_hebb(args[0], codes, *args[1:], beta=cfg.beta, rho_in=cfg.rho_in, rho_out=cfg.rho_out,
                                   norm_policy=cfg.norm_policy, reseed_after=cfg.reseed_after)
            return energy

        fit_local(self, split, learn_batch, desc="vn_pairs fit")

    def codes(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Codes at prediction (input clamped alone, ``test_lam``, ``test_topk``): ``(N, Ka, Kb)``."""
        cfg = self.config
        lam = cfg.lam_for("predict")
        topk = cfg.topk if cfg.test_topk is None else cfg.test_topk
        out = []
        for start in range(0, x.shape[0], 1024):
            m = None if x_mask is None else x_mask[start : start + 1024]
            out.append(self.infer(x[start : start + 1024], x_mask=m, lam=lam, topk=topk).codes)
        return torch.cat(out)

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        return self.layer.output(self.codes(x, x_mask)).to(x.dtype)  # the caller's dtype

    @torch.no_grad()
    def active_count(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Code size: non-zero pair codes per sample at prediction, ``(N,)`` long."""
        spec = self.require_built()
        _check_tensor(x, "x", spec.x_shape)
        return (self.codes(x, x_mask) != 0).flatten(1).sum(-1)


@torch.no_grad()
def pair_atom_choice(model: PairVN, x: torch.Tensor, share: float = 0.9) -> dict[str, object]:
    """Which atoms inference picks for two-factor inputs ``x`` ``(N, n_a + n_b)``.

    The *matching* atom of a sample is ``(a*, b*)`` with ``a* = argmax_a <p_a, x_a>`` and
    ``b* = argmax_b <q_b, x_b>`` (for one-hot halves: the factors that best encode ``cx`` and
    ``cy``). Each sample's code at prediction is classified by its l1 mass:

    * ``"single"``: the matching atom holds at least ``share`` of the mass;
    * ``"two_half"``: it holds less than half, and atoms ``(a*, b != b*)`` and ``(a != a*, b*)``
      (each explaining one half of the input) hold at least ``share`` together;
    * ``"other"``: anything else (including an all-zero code).

    Returns:
        ``{"single", "two_half", "other"}``: fractions of samples; ``"kind"``: ``(N,)`` list of
        labels; ``"matching_share"``: ``(N,)`` tensor, the matching atom's share of the mass;
        ``"active"``: ``(N,)`` non-zero codes per sample.
    """
    if not isinstance(model, PairVN):
        raise ValueError(f"model: expected a fitted vn_pairs model, got {type(model).__name__}")
    spec = model.require_built()
    _check_tensor(x, "x", spec.x_shape)
    if not 0.5 < share <= 1.0:
        raise ValueError(f"share: must be in (0.5, 1], got {share!r}")
    layer = model.layer
    x = x.to(layer.P.dtype)
    G = model.codes(x).abs()  # (N, Ka, Kb)
    N, n_a = G.shape[0], layer.P.shape[0]
    a_star = (x[:, :n_a] @ layer.P).argmax(-1)  # (N,)
    b_star = (x[:, n_a:] @ layer.Q).argmax(-1)
    mass = G.flatten(1).sum(-1).clamp_min(1e-30)  # (N,)
    rows = torch.arange(N, device=G.device)
    match = G[rows, a_star, b_star] / mass
    row_only = (G[rows, a_star, :].sum(-1) - G[rows, a_star, b_star]) / mass  # (a*, b != b*)
    col_only = (G[rows, :, b_star].sum(-1) - G[rows, a_star, b_star]) / mass  # (a != a*, b*)
    nonzero = G.flatten(1).sum(-1) > 0
    single = nonzero & (match >= share)
    two_half = nonzero & (match < 0.5) & (row_only > 0) & (col_only > 0) & (row_only + col_only >= share)
    kind = ["single" if s else "two_half" if t else "other" for s, t in zip(single.tolist(), two_half.tolist())]
    return {
        "single": float(single.float().mean()), "two_half": float(two_half.float().mean()),
        "other": float((~single & ~two_half).float().mean()), "kind": kind, "matching_share": match,
        "active": (G != 0).flatten(1).sum(-1),
    }
