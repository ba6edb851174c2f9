"""Matrix-valued atoms: the composed operator ``W* = U G S^T`` is the output.

For data that are matrices (an image, a 2D field: ``m x n``) two libraries of code vectors,
``U`` ``(m, Ku)`` (column profiles, one per row index of the code) and ``S`` ``(n, Ks)`` (row
profiles), define the atoms ``u_a s_b^T`` for *every* pairing ``(a, b)``: atoms share their code
vectors. A sample's code is a sparse matrix ``G`` ``(Ku, Ks)`` and its reconstruction is the
composed operator itself::

    W* = sum_ab G_ab u_a s_b^T = U G S^T                                   (m, n)
    E(G) = 1/2 sum_ij P_ij (I_ij - (U G S^T)_ij)^2 + lam ||G||_1          (one sample)

``P`` ``(m, n)`` is a per-pixel precision: 1 everywhere, a 0/1 observation mask (missing
pixels), or a mask-weighted sum of several clamped images (``MatrixVN`` clamps the target with
precision ``beta``). For fixed atoms ``E`` is a LASSO in ``G`` whose Hessian is the Kronecker
product ``(S^T S) (x) (U^T U)``; it is never formed. One FISTA iteration (``hebbnets.vn.fista``)
applies it as two small matrix products per sample::

    H(G) = (U^T U) G (S^T S)                  unmasked (P = 1; a constant P scales it)
    H(G) = U^T (P * (U G S^T)) S              per-pixel precision (masks)
    Lip  = lambda_max(U^T U) lambda_max(S^T S) max(P)     (the Kronecker spectrum is the
                                                           product of the factors' spectra)

Atomic-Hebb (batch mean, ``R = P * (I - U G S^T)``)::

    U += rho_u R S G^T        S += rho_s R^T U G

equals ``-rho`` times the gradient of the batch-mean free energy in ``(U, S)`` at the inferred
codes (Danskin), and column ``a`` of ``dU`` is ``R S G[a, :]^T``: a code vector whose row (``U``)
or column (``S``) of ``G`` is zero for the whole batch receives exactly nothing.

``PrivatePairLayer`` is the control with the same atom form and no shared factors: ``K``
atoms ``u_k s_k^T``, each with its own two code vectors (a flat library of fixed pairs).

Read top to bottom: the shared machinery (``_PairLibrary``: inference, energy, Atomic-Hebb),
``MatrixAtomLayer`` and ``PrivatePairLayer`` (their products), the slow references
(``lasso_reference``: one sample at a time with the explicit design matrix), then the registered
model ``MatrixVN`` (``"vn_matrix"``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import torch
from torch import nn

from .._model import DataSpec, Model
from .._split import Split
from .._validation import check_choice, check_int, check_positive
from ..models import register
from ._fit import LocalFitConfig, fit_local
from .fista import FistaResult, fista, ista_reference, kkt_violation, largest_eigenvalue

NORM_POLICIES = ("unit", "clip", "none")
FACTORS = ("shared", "private")

#: a per-pixel precision ``(B, m, n)``, a constant, or ``None`` (= 1 everywhere)
Precision = Union[torch.Tensor, float, None]


def _check_images(t: torch.Tensor, name: str, m: int, n: int) -> None:
    if not isinstance(t, torch.Tensor) or not torch.is_floating_point(t):
        raise ValueError(f"{name}: expected a float tensor (B, {m}, {n})")
    if t.ndim != 3 or tuple(t.shape[1:]) != (m, n) or t.shape[0] == 0:
        raise ValueError(f"{name}: expected shape (B, {m}, {n}) with B >= 1, got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name}: contains NaN or Inf")


def _check_precision(weight, image: torch.Tensor, name: str) -> None:
    if weight is None:
        return
    if isinstance(weight, (int, float)) and not isinstance(weight, bool):
        check_positive(float(weight), name)
        return
    if not isinstance(weight, torch.Tensor) or tuple(weight.shape) != tuple(image.shape):
        shape = tuple(weight.shape) if isinstance(weight, torch.Tensor) else type(weight).__name__
        raise ValueError(f"{name}: expected a tensor shaped like the image {tuple(image.shape)}, got {shape}")
    if not bool(torch.isfinite(weight).all()) or bool((weight < 0).any()):
        raise ValueError(f"{name}: must be finite and >= 0 (a 0/1 mask or a precision)")


def _top_eigenvalue(A: torch.Tensor) -> torch.Tensor:
    """Largest eigenvalue of a small symmetric PSD matrix, exactly (``eigvalsh``)."""
    return torch.linalg.eigvalsh(A)[-1].clamp_min(0.0)


class _PairLibrary(nn.Module):
    """Atoms built from two libraries ``U`` ``(m, .)`` and ``S`` ``(n, .)``: inference, free
    energy and Atomic-Hebb written once over the products a subclass defines.

    A subclass defines ``code_shape``, ``compose`` (codes -> images), ``correlate`` (its
    adjoint: images -> codes), ``_gram_product`` (the unmasked Hessian), ``_gram_top``
    (its largest eigenvalue), ``hebb_directions`` and ``active_vectors``, and ``design``
    (the explicit matrix of flattened atoms, for references and speed comparisons only).
    ``fused``: FISTA's loop (``hebbnets.vn.fista.resolve_fused``; ``"auto"``: the compiled fused
    loop where it applies and pays), an attribute a user may set on a layer or the class.
    """

    U: nn.Parameter
    S: nn.Parameter
    fused: bool | str = "auto"

    def __init__(self, m: int, n: int, ku: int, ks: int, dtype: torch.dtype):
        super().__init__()
        U = torch.randn(m, ku, dtype=dtype)
        S = torch.randn(n, ks, dtype=dtype)
        # unit-norm random start: the scale the norm policy keeps
        self.U = nn.Parameter(U / U.norm(dim=0), requires_grad=False)  # (m, Ku)
        self.S = nn.Parameter(S / S.norm(dim=0), requires_grad=False)  # (n, Ks)

    @property
    def image_shape(self) -> tuple[int, int]:
        return self.U.shape[0], self.S.shape[0]

    # -- products a subclass defines -----------------------------------------------------------
    code_shape: tuple[int, ...]

    def compose(self, codes: torch.Tensor) -> torch.Tensor:  # (B, *code_shape) -> (B, m, n)
        raise NotImplementedError

    def correlate(self, images: torch.Tensor) -> torch.Tensor:  # (B, m, n) -> (B, *code_shape)
        raise NotImplementedError

    def _gram_product(self):  # -> (codes -> H codes) for unit precision
        raise NotImplementedError

    def _gram_top(self) -> torch.Tensor:  # largest eigenvalue of the unit-precision Hessian
        raise NotImplementedError

    def hebb_directions(self, residual: torch.Tensor, codes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def active_vectors(self, codes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def design(self) -> torch.Tensor:
        raise NotImplementedError

    # -- inference -------------------------------------------------------------------------------
    def hessian(self, precision: Precision = None):
        """The LASSO's Hessian as an operator on ``(B, *code_shape)`` codes: the factorised
        product for a constant precision, ``correlate(P * compose(G))`` for per-pixel ``P``."""
        if precision is None or not isinstance(precision, torch.Tensor):
            product = self._gram_product()
            if precision is None or float(precision) == 1.0:
                return product
            c = float(precision)
            return lambda G: c * product(G)  # noqa: E731
        return lambda G: self.correlate(precision * self.compose(G))  # noqa: E731

    def lipschitz(self, precision: Precision = None) -> torch.Tensor:
        """An upper bound of the Hessian's largest eigenvalue: the unit-precision value times
        ``max P`` (per sample ``(B,)`` for a per-pixel precision; exact for a constant one)."""
        top = self._gram_top()
        if precision is None:
            return top
        if not isinstance(precision, torch.Tensor):
            return top * float(precision)
        return top * precision.reshape(precision.shape[0], -1).amax(-1)  # (B,)

    @torch.no_grad()
    def infer(self, image: torch.Tensor, precision: Precision = None, *, lam: float, nonneg: bool = False,
              topk: int = 0, max_iter: int = 200, tol: float = 1e-4, g0: torch.Tensor | None = None,
              retire_rows: bool = False) -> FistaResult:
        """Sparse codes of a batch: ``min_G 1/2 sum P (I - compose(G))^2 + lam ||G||_1``.

        Args:
            image: ``(B, m, n)`` clamped images ``I``.
            precision: ``None`` (all pixels weigh 1), a constant, or ``(B, m, n)`` per-pixel
                weights >= 0 (a 0/1 mask: missing pixels do not count).
            lam: l1 weight; nonneg: codes >= 0; topk: at most ``k`` non-zeros per sample (0 = off).
            max_iter, tol: FISTA budget and stopping tolerance (``hebbnets.vn.fista``).
            g0: ``(B, *code_shape)`` warm start.
            retire_rows: each sample stops at its own convergence and leaves the batch
                (``fista``'s ``hessian_rows``; a per-pixel precision is cut to the samples left).
        Returns:
            ``FistaResult`` with ``codes`` ``(B, *code_shape)`` and ``objective`` ``(B,)`` equal
            to the energy minus the constant ``1/2 sum P I^2``.
        """
        m, n = self.image_shape
        _check_images(image, "image", m, n)
        _check_precision(precision, image, "precision")
        image = image.to(self.U.dtype)
        weighted = image if precision is None else precision * image
        b = self.correlate(weighted)  # (B, *code_shape)
        per_pixel = isinstance(precision, torch.Tensor)
        rows = (lambda r: self.hessian(precision[r] if per_pixel else precision)) if retire_rows else None  # noqa: E731
        return fista(self.hessian(precision), b, lam, self.lipschitz(precision), g0=g0, max_iter=max_iter,
                     tol=tol, nonneg=nonneg, topk=topk, fused=self.fused, hessian_rows=rows)

    def residual(self, image: torch.Tensor, codes: torch.Tensor, precision: Precision = None) -> torch.Tensor:
        """Precision-weighted residual ``R = P * (I - compose(G))`` ``(B, m, n)``."""
        r = image - self.compose(codes)
        return r if precision is None else precision * r

    def energy(self, image: torch.Tensor, codes: torch.Tensor, lam: float, precision: Precision = None) -> torch.Tensor:
        """Free energy ``(B,)`` from the un-expanded formula; differentiable in ``U`` and ``S``
        (the codes are held fixed): autograd of its mean is what Atomic-Hebb follows."""
        r = image - self.compose(codes)
        sq = r**2 if precision is None else precision * r**2
        return 0.5 * sq.flatten(1).sum(-1) + lam * codes.abs().flatten(1).sum(-1)

    def optimality_residual(self, image: torch.Tensor, codes: torch.Tensor, lam: float,
                            precision: Precision = None, nonneg: bool = False) -> torch.Tensor:
        """KKT residual ``(B,)`` of the codes, from the un-expanded gradient
        ``-correlate(P * (I - compose(G)))`` (independent of the factorised Hessian)."""
        return kkt_violation(-self.correlate(self.residual(image, codes, precision)), codes, lam, nonneg)

    # -- slow learning -----------------------------------------------------------------------------
    @torch.no_grad()
    def atomic_hebb(self, image: torch.Tensor, codes: torch.Tensor, precision: Precision = None, *,
                    rho_u: float, rho_s: float, norm_policy: str = "unit") -> dict[str, torch.Tensor]:
        """``U += rho_u mean R S G^T``, ``S += rho_s mean R^T U G`` (both from the same ``R``),
        then the norm policy on the code vectors that were active in the batch.

        Args:
            image: ``(B, m, n)``; codes: ``(B, *code_shape)`` inferred for it; precision as in
                ``infer``.
            norm_policy: ``"unit"`` rescales every active code vector to unit norm, ``"clip"``
                only those longer than 1, ``"none"`` leaves them alone. Inactive vectors (and
                every vector of a library whose rate is 0) are never rewritten: they keep their
                exact bits.
        Returns:
            ``{"U": dU, "S": dS}``: the raw updates ``(m, .)``, ``(n, .)`` before the norm policy.
        """
        check_choice(norm_policy, NORM_POLICIES, "norm_policy")
        R = self.residual(image.to(self.U.dtype), codes, precision)  # (B, m, n)
        dir_u, dir_s = self.hebb_directions(R, codes)
        dU, dS = rho_u * dir_u, rho_s * dir_s
        self.U += dU
        self.S += dS
        active_u, active_s = self.active_vectors(codes)
        for P, active, rho in ((self.U, active_u, rho_u), (self.S, active_s, rho_s)):
            if norm_policy == "none" or rho == 0 or not bool(active.any()):  # rho 0: learning off, no rewrite
                continue
            idx = active.nonzero().squeeze(-1)
            norms = P[:, idx].norm(dim=0).clamp_min(1e-12)
            if norm_policy == "clip":
                norms = norms.clamp_min(1.0)
            P[:, idx] = P[:, idx] / norms
        return {"U": dU, "S": dS}


class MatrixAtomLayer(_PairLibrary):
    """Atoms ``u_a s_b^T`` for every pairing of ``U`` ``(m, Ku)`` and ``S`` ``(n, Ks)``; codes
    ``G`` ``(B, Ku, Ks)``; output ``U G S^T`` ``(B, m, n)``. ``U`` and ``S`` are learned by
    Atomic-Hebb, never by autograd (``requires_grad=False``).
    """

    def __init__(self, m: int, n: int, ku: int, ks: int, dtype: torch.dtype = torch.float32):
        super().__init__(m, n, ku, ks, dtype)

    @property
    def code_shape(self) -> tuple[int, int]:
        return self.U.shape[1], self.S.shape[1]

    @property
    def num_atoms(self) -> int:
        return self.U.shape[1] * self.S.shape[1]

    def compose(self, codes: torch.Tensor) -> torch.Tensor:
        """``U G S^T``: ``(B, Ku, Ks) -> (B, m, n)``."""
        return self.U @ codes @ self.S.T

    def correlate(self, images: torch.Tensor) -> torch.Tensor:
        """``U^T X S``: ``(B, m, n) -> (B, Ku, Ks)`` (the adjoint of ``compose``)."""
        return self.U.T @ images @ self.S

    def _gram_product(self):
        UtU, StS = self.U.T @ self.U, self.S.T @ self.S  # (Ku, Ku), (Ks, Ks)
        # G @ StS folds the batch into one GEMM; two small products per sample, never (Ku Ks)^2
        return lambda G: UtU @ (G @ StS)  # noqa: E731

    def _gram_top(self) -> torch.Tensor:
        return _top_eigenvalue(self.U.T @ self.U) * _top_eigenvalue(self.S.T @ self.S)

    def hebb_directions(self, residual, codes):
        """``(mean R S G^T, mean R^T U G)``: ``(m, Ku)``, ``(n, Ks)``."""
        B = codes.shape[0]
        dU = torch.einsum("bij,jk,bak->ia", residual, self.S, codes) / B
        dS = torch.einsum("bij,ia,bak->jk", residual, self.U, codes) / B
        return dU, dS

    def active_vectors(self, codes):
        """Rows (``U``) and columns (``S``) of ``G`` non-zero for some sample: ``(Ku,)``, ``(Ks,)``."""
        nz = codes != 0
        return nz.any(dim=2).any(dim=0), nz.any(dim=1).any(dim=0)

    def design(self) -> torch.Tensor:
        """Flattened atoms ``vec(u_a s_b^T)`` as columns ``a Ks + b``: ``kron(U, S)`` ``(m n, Ku Ks)``."""
        return torch.kron(self.U, self.S)

    def kronecker_gram(self) -> torch.Tensor:
        """The ``(Ku Ks, Ku Ks)`` Gram matrix ``kron(U^T U, S^T S)`` the fast path never forms."""
        return torch.kron(self.U.T @ self.U, self.S.T @ self.S)


class PrivatePairLayer(_PairLibrary):
    """The no-shared-factors control: ``K`` atoms ``u_k s_k^T``, each with its own column of
    ``U`` ``(m, K)`` and ``S`` ``(n, K)`` (a flat library of fixed pairs); codes ``g`` ``(B, K)``;
    output ``U diag(g) S^T`` ``(B, m, n)``."""

    def __init__(self, m: int, n: int, k: int, dtype: torch.dtype = torch.float32):
        super().__init__(m, n, k, k, dtype)

    @property
    def code_shape(self) -> tuple[int]:
        return (self.U.shape[1],)

    @property
    def num_atoms(self) -> int:
        return self.U.shape[1]

    def compose(self, codes: torch.Tensor) -> torch.Tensor:
        """``U diag(g) S^T``: ``(B, K) -> (B, m, n)``."""
        return (self.U * codes[:, None, :]) @ self.S.T

    def correlate(self, images: torch.Tensor) -> torch.Tensor:
        """``u_k^T X s_k`` for every ``k``: ``(B, m, n) -> (B, K)``."""
        return ((images @ self.S) * self.U).sum(1)

    def _gram(self) -> torch.Tensor:
        return (self.U.T @ self.U) * (self.S.T @ self.S)  # (K, K): <u_k s_k^T, u_l s_l^T>

    def _gram_product(self):
        H = self._gram()
        return lambda g: g @ H  # noqa: E731

    def _gram_top(self) -> torch.Tensor:
        return largest_eigenvalue(self._gram(), n_iter=200)

    def hebb_directions(self, residual, codes):
        B = codes.shape[0]
        dU = ((residual @ self.S) * codes[:, None, :]).sum(0) / B  # (m, K)
        dS = ((residual.transpose(1, 2) @ self.U) * codes[:, None, :]).sum(0) / B  # (n, K)
        return dU, dS

    def active_vectors(self, codes):
        a = (codes != 0).any(dim=0)
        return a, a

    def design(self) -> torch.Tensor:
        """Flattened atoms ``vec(u_k s_k^T)`` as columns: ``(m n, K)`` (Khatri-Rao product)."""
        m, n = self.image_shape
        return (self.U[:, None, :] * self.S[None, :, :]).reshape(m * n, -1)


def lasso_reference(layer: _PairLibrary, image: torch.Tensor, lam: float, precision: torch.Tensor | None = None,
                    nonneg: bool = False, n_iter: int = 20000) -> torch.Tensor:
    """The slow, obviously correct reference of ``layer.infer``: one sample at a time, the image
    flattened and the atoms as the explicit design matrix ``layer.design()`` ``(m n, #atoms)``
    (for ``MatrixAtomLayer`` its Gram matrix is the Kronecker product), solved by plain ISTA on
    the un-expanded energy (``hebbnets.vn.ista_reference``). A per-pixel precision ``P`` scales
    the rows of the design and the pixels by ``sqrt(P)``.

    Args:
        layer: a ``MatrixAtomLayer`` or ``PrivatePairLayer``.
        image: ``(B, m, n)``; precision: optional ``(B, m, n)`` weights >= 0.
    Returns:
        ``(B, *layer.code_shape)`` codes.
    """
    D = layer.design()  # (m n, A)
    out = []
    for i in range(image.shape[0]):
        x = image[i].reshape(1, -1)  # (1, m n)
        Di = D
        if precision is not None:
            w = precision[i].reshape(-1).sqrt()  # (m n,)
            Di, x = D * w[:, None], x * w
        out.append(ista_reference(Di, x, lam, n_iter=n_iter, nonneg=nonneg)[0])
    return torch.stack(out).reshape(image.shape[0], *layer.code_shape)


# -- the registered model ----------------------------------------------------------------------
@dataclass
class MatrixVNConfig(LocalFitConfig):
    """Configuration of ``MatrixVN`` (``"vn_matrix"``; the shared fields: ``LocalFitConfig``).

    Attributes:
        atoms_u, atoms_s: ``Ku`` column profiles (``U`` ``(m, Ku)``) and ``Ks`` row profiles
            (``S`` ``(n, Ks)``); ``Ku * Ks`` atoms.
        factors: ``"shared"`` (every pairing ``u_a s_b^T``; ``MatrixAtomLayer``) or
            ``"private"`` (the control: ``Ku * Ks`` atoms with their own vectors;
            ``PrivatePairLayer``).
        lam: l1 weight during training; test_lam: l1 weight at prediction (``None``: ``lam``).
        beta: precision of the clamped target ``y`` during training (0: the code is inferred
            from the input alone, as at prediction).
        topk: at most ``k`` non-zero code entries per sample (0 = off); nonneg: codes >= 0.
        max_iter, tol: FISTA budget and tolerance per inference.
        rho_u, rho_s: Atomic-Hebb rates of ``U`` and ``S``.
        norm_policy: ``"unit"``, ``"clip"`` or ``"none"`` for active code vectors after each
            update (without a bound the l1 penalty is escaped by growing vectors).
        init: ``"random"`` (unit-norm Gaussian vectors) or ``"data"`` (``U`` from the
            largest column of random training images, ``S`` from the largest row; normalised).
        epochs, batch_size, val_fraction, patience: the VN training loop (``vn._fit``).
        warm_start: each training sample's FISTA solve starts from its code of the previous
            epoch (a per-sample cache; the same optimum, fewer iterations), as ``vn``'s.
        retire_rows: each sample's FISTA solve stops at its own convergence and leaves the
            batch, as ``vn``'s.
        progress: progress bar; dtype: ``"float32"`` or ``"float64"``.
    """

    atoms_u: int = 28
    atoms_s: int = 28
    factors: str = "shared"
    beta: float = 0.0
    topk: int = 0
    nonneg: bool = False
    max_iter: int = 200
    tol: float = 1e-4
    rho_u: float = 0.5
    rho_s: float = 0.5
    norm_policy: str = "unit"
    init: str = "random"
    batch_size: int = 32
    # neutral: off computes what fits did before the field existed (record keys omit it)
    warm_start: bool = field(default=False, metadata={"neutral": False})
    retire_rows: bool = field(default=False, metadata={"neutral": False})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_sparse_code_fields(self, atoms=("atoms_u", "atoms_s"), rates=("rho_u", "rho_s"))
        for name in ("warm_start", "retire_rows"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: expected True or False, got {getattr(self, name)!r}")
        check_choice(self.factors, FACTORS, "factors")
        check_choice(self.init, ("random", "data"), "init")


def check_sparse_code_fields(config, atoms: tuple[str, ...], rates: tuple[str, ...]) -> None:
    """Checks shared by the matrix-family configs: the named atom counts (ints >= 1) and
    Hebbian rates (>= 0), ``lam``, ``test_lam``, ``beta``, ``topk``, ``max_iter``, ``tol`` and
    ``norm_policy`` (the training loop's fields and ``dtype``: ``LocalFitConfig``)."""
    for name in (*atoms, "max_iter"):
        check_int(getattr(config, name), name)
    check_int(config.topk, "topk", minimum=0)
    for name in ("lam", "beta", *rates):
        check_positive(getattr(config, name), name, allow_zero=True)
    if config.test_lam is not None:
        check_positive(config.test_lam, "test_lam", allow_zero=True)
    check_positive(config.tol, "tol")
    check_choice(config.norm_policy, NORM_POLICIES, "norm_policy")


@dataclass
class MatrixInference:
    """Result of ``MatrixVN.infer`` for ``B`` samples.

    Attributes:
        codes: ``(B, Ku, Ks)`` (shared) or ``(B, Ku Ks)`` (private).
        x, y: ``(B, m, n)`` clamped input and target (``y`` ``None`` when not clamped).
        x_mask, y_mask: ``(B, m, n)`` 0/1 masks or ``None``.
        image, precision: the combined clamped image and per-pixel precision the layer solved
            for (``precision`` ``None`` = 1, a float, or ``(B, m, n)``).
        lam: l1 weight used; iterations, converged: the FISTA run.
    """

    codes: torch.Tensor
    x: torch.Tensor
    y: torch.Tensor | None
    x_mask: torch.Tensor | None
    y_mask: torch.Tensor | None
    image: torch.Tensor
    precision: torch.Tensor | float | None
    lam: float
    iterations: int
    converged: bool


@register("vn_matrix")
class MatrixVN(Model):
    """Reconstruction with matrix-valued atoms: ``y_hat = U G S^T`` with ``G`` inferred from the
    (possibly masked) input image. Inputs and targets are ``(N, m, n)`` matrices of one shape
    (``x = y`` = the image; an ``x_mask`` hides pixels for inpainting).

    Free energy (one sample; ``W = U G S^T``)::

        F = 1/2 ||m_x * (x - W)||^2 + beta/2 ||m_y * (y - W)||^2 + lam ||G||_1

    (the ``beta`` term only while ``y`` is clamped in training). The two data terms are one
    precision-weighted term up to a constant, so inference is ``MatrixAtomLayer.infer``.
    """

    Config = MatrixVNConfig

    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        if spec.is_classification:
            raise ValueError("split: vn_matrix reconstructs real-valued matrices; got integer class labels")
        if len(spec.x_shape) != 2:
            raise ValueError(f"split: vn_matrix needs matrix inputs (N, m, n); got per-sample shape {spec.x_shape}")
        if spec.y_shape != spec.x_shape:
            raise ValueError(f"split: vn_matrix reconstructs its input; targets {spec.y_shape} must be shaped "
                             f"like inputs {spec.x_shape}")
        m, n = spec.x_shape
        dtype = getattr(torch, cfg.dtype)
        if cfg.factors == "shared":
            self.layer: _PairLibrary = MatrixAtomLayer(m, n, cfg.atoms_u, cfg.atoms_s, dtype)
        else:
            self.layer = PrivatePairLayer(m, n, cfg.atoms_u * cfg.atoms_s, dtype)
        self.register_buffer("initialised", torch.zeros((), dtype=torch.bool))

    @property
    def dtype(self) -> torch.dtype:
        return self.layer.U.dtype

    # -- inference -------------------------------------------------------------------------------
    def _clamp(self, x, y, x_mask, y_mask):
        """``(image, precision)`` of the combined data term (class docstring)."""
        beta = self.config.beta
        if y is None or beta == 0:
            return x, x_mask
        if x_mask is None and y_mask is None:
            return (x + beta * y) / (1 + beta), 1.0 + beta
        mx = torch.ones_like(x) if x_mask is None else x_mask
        my = torch.ones_like(y) if y_mask is None else y_mask
        P = mx + beta * my  # (B, m, n)
        return torch.where(P > 0, (mx * x + beta * my * y) / P.clamp_min(1e-30), 0.0), P

    @torch.no_grad()
    def infer(self, x: torch.Tensor, y: torch.Tensor | None = None, x_mask: torch.Tensor | None = None,
              y_mask: torch.Tensor | None = None, lam: float | None = None,
              g0: torch.Tensor | None = None) -> MatrixInference:
        """Infer the codes of a batch.

        Args:
            x: ``(B, m, n)`` input images; y: optional ``(B, m, n)`` target clamped with
                precision ``beta``; x_mask, y_mask: optional ``(B, m, n)`` 0/1 masks.
            lam: l1 weight (default: the training ``lam``).
            g0: optional warm start, shaped like the codes (``(B, Ku, Ks)``; private: ``(B, K)``).
        """
        spec = self.require_built()
        m, n = spec.x_shape
        for name, t in (("x", x), ("y", y), ("x_mask", x_mask), ("y_mask", y_mask)):
            if t is not None:
                _check_images(t, name, m, n)
                if t.shape[0] != x.shape[0]:
                    raise ValueError(f"{name}: has {t.shape[0]} samples but x has {x.shape[0]}")
        lam = self.config.lam if lam is None else lam
        cast = lambda t: None if t is None else t.to(self.dtype)  # noqa: E731
        x, y, x_mask, y_mask = cast(x), cast(y), cast(x_mask), cast(y_mask)
        image, precision = self._clamp(x, y, x_mask, y_mask)
        cfg = self.config
        res = self.layer.infer(image, precision, lam=lam, nonneg=cfg.nonneg, topk=cfg.topk,
                               max_iter=cfg.max_iter, tol=cfg.tol, g0=cast(g0), retire_rows=cfg.retire_rows)
        return MatrixInference(res.codes, x, y, x_mask, y_mask, image, precision, lam, res.iterations, res.converged)

    def energy(self, inference: MatrixInference) -> torch.Tensor:
        """Free energy ``F`` ``(B,)`` (class docstring) at the inference's codes, from the
        un-expanded formula; differentiable in ``U`` and ``S``."""
        inf = inference
        W = self.layer.compose(inf.codes)
        rx = inf.x - W if inf.x_mask is None else inf.x_mask * (inf.x - W)
        F = 0.5 * (rx**2).flatten(1).sum(-1) + inf.lam * inf.codes.abs().flatten(1).sum(-1)
        if inf.y is not None and self.config.beta:
            ry = inf.y - W if inf.y_mask is None else inf.y_mask * (inf.y - W)
            F = F + 0.5 * self.config.beta * (ry**2).flatten(1).sum(-1)
        return F

    @torch.no_grad()
    def atomic_hebb(self, inference: MatrixInference) -> dict[str, torch.Tensor]:
        """One Atomic-Hebb step from ``inference`` (``_PairLibrary.atomic_hebb``)."""
        cfg = self.config
        return self.layer.atomic_hebb(inference.image, inference.codes, inference.precision, rho_u=cfg.rho_u,
                                      rho_s=cfg.rho_s, norm_policy=cfg.norm_policy)

    # -- Model API ---------------------------------------------------------------------------------
    def _init_from_data(self, split: Split) -> None:
        """``U``: the largest-norm column of random training images; ``S``: the largest row."""
        gen = torch.Generator().manual_seed(self.seed)
        x = split.x.to(self.dtype)
        if split.x_mask is not None:
            x = x * split.x_mask.to(self.dtype)
        for P, dim in ((self.layer.U, 1), (self.layer.S, 2)):
            idx = torch.randint(len(x), (P.shape[1],), generator=gen, device=gen.device).to(x.device)
            imgs = x[idx]  # (K, m, n)
            vecs = imgs if dim == 1 else imgs.transpose(1, 2)  # columns of ``vecs[k]`` live in R^(P rows)
            best = vecs.norm(dim=1).argmax(-1)  # (K,) the largest column of each image
            v = vecs[torch.arange(len(idx), device=vecs.device), :, best]  # (K, rows)
            norms = v.norm(dim=1, keepdim=True)
            fallback = P.T  # an all-zero image keeps its random vector
            P.copy_(torch.where(norms > 1e-12, v / norms.clamp_min(1e-12), fallback).T)

    def _fit(self, split: Split) -> None:
        def init(train: Split) -> None:
            if not bool(self.initialised):
                if self.config.init == "data":
                    self._init_from_data(train)
                self.initialised.fill_(True)

        cast = lambda t: None if t is None else t.to(self.dtype)  # noqa: E731
        x, y, xm, ym = cast(split.x), cast(split.y), cast(split.x_mask), cast(split.y_mask)

        # warm_start: per training sample its last code (zeros: a cold start), shaped like the codes
        cache = x.new_zeros(len(split), *self.layer.code_shape) if self.config.warm_start else None
        self.fit_iterations = 0  # FISTA iterations of the fit's training inferences (what warm starts save)

        def learn_batch(i: torch.Tensor) -> float:
            inf = self.infer(x[i], y[i], None if xm is None else xm[i], None if ym is None else ym[i],
                             g0=None if cache is None else cache[i])
            if cache is not None:
                cache[i] = inf.codes
            self.fit_iterations += inf.iterations
            energy = float(self.energy(inf).sum())
            self.atomic_hebb(inf)
            return energy

        fit_local(self, split, learn_batch, desc="vn_matrix fit", on_start=init)

    def _codes(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> list[torch.Tensor]:
        cfg = self.config
        lam = cfg.lam_for("predict")
        out = []
        for start in range(0, x.shape[0], 1024):
            m = None if x_mask is None else x_mask[start : start + 1024]
            out.append(self.infer(x[start : start + 1024], x_mask=m, lam=lam).codes)
        return out

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        outs = [self.layer.compose(g) for g in self._codes(x, x_mask)]
        return torch.cat(outs).to(x.dtype)  # the caller's dtype

    @torch.no_grad()
    def codes(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Codes at prediction (input clamped alone, ``test_lam``) of images ``x`` ``(N, m, n)``
        (optional 0/1 ``x_mask``): ``(N, Ku, Ks)`` (shared) or ``(N, Ku Ks)`` (private)."""
        spec = self.require_built()
        _check_images(x, "x", *spec.x_shape)
        return torch.cat(self._codes(x, x_mask))

    @torch.no_grad()
    def active_count(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Code size: non-zero code entries per sample at prediction, ``(N,)`` long."""
        return (self.codes(x, x_mask) != 0).flatten(1).sum(-1)
