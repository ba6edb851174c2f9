"""Vector-Network layers as ``nn.Module``s for other people's networks.

Each layer infers a sparse code per sample by the VN models' own batched FISTA and returns the
layer's output; it learns in either of two ways:

* **end to end**: the output is differentiable in the input and in the atoms through the LASSO
  solution, by implicit differentiation on the active set (``hebbnets.nn.implicit``; the solver's
  iterations are never unrolled), so the layer trains inside a bigger network with any torch
  optimiser;
* **locally**: ``hebb_step`` is the paper's Atomic-Hebb rule (``docs/vn.md`` section 3), no
  backprop: at the code of the layer energy it moves the atoms by ``-lr`` times the energy's
  gradient in them (Danskin: the gradient of the minimised energy), and atoms whose code is zero
  for the whole batch receive exactly nothing.

The math lives in ``hebbnets.vn`` and is imported, not copied: ``VNLayer`` is a
``hebbnets.vn.AtomLayer`` solved by ``masked_lasso``; ``MatrixAtomLayer`` is
``hebbnets.vn.MatrixAtomLayer`` (its factorised Hessian, inference and Atomic-Hebb);
``AppliedAtomLayer`` is a one-layer ``hebbnets.vn.AppliedAtomStack`` (its clamped inference and
Atomic-Hebb). What the layers add is the differentiable forward, the parameters with
``requires_grad=True``, and input checks.

Every layer is built on CPU in torch's default dtype (or ``dtype``) from the global RNG (seed it
with ``torch.manual_seed`` as for ``nn.Linear``), moved by ``device`` or ``.to(...)``, and takes
inputs on its device in its dtype.
"""
from __future__ import annotations

import torch

from .._validation import check_choice, check_int, check_positive
from ..vn.applied import NORM_POLICIES as PAIR_NORM_POLICIES
from ..vn.applied import AppliedAtomStack
from ..vn.fista import PRODUCT_FORMS, LassoTerm, kkt_violation, masked_lasso
from ..vn.matrix import MatrixAtomLayer as _MatrixLibrary
from ..vn.network import NORM_POLICIES, AtomLayer, rescale_atoms
from ._checks import check_input, check_mask_like, factory_dtype
from .implicit import implicit_lasso, sparse_code


def _check_solver(lam: float, max_iter: int, tol: float) -> None:
    check_positive(lam, "lam", allow_zero=True)
    check_int(max_iter, "max_iter")
    check_positive(tol, "tol")


def _trainable(module: torch.nn.Module, device: torch.device | str | None) -> None:
    """The ``hebbnets.vn`` parents hold their atoms with ``requires_grad=False`` (learned by
    Atomic-Hebb only); a layer for other networks learns them by gradients too."""
    for p in module.parameters():
        p.requires_grad_(True)
    if device is not None:
        module.to(device)


# --- vector codes ------------------------------------------------------------------------------
class VNLayer(AtomLayer):
    """A Vector-Network layer: ``K`` rank-1 atoms ``u_k s_k^T`` mapping ``R^n`` to ``R^m``.

    ``forward`` infers the code of each input row,

        g*(x) = argmin_g 1/2 ||m ⊙ (x - S g)||^2 + lam ||g||_1          (B, K)

    and returns the message ``U g*`` ``(B, m)`` (``docs/vn.md`` sections 1-2: the layer's output
    at prediction, nothing clamped above it). Gradients reach ``x``, ``S`` and ``U``.

    ``hebb_step`` learns locally from the layer energy of the VN's learning phase, with an
    optional top-down target ``h`` ``(B, m)`` clamped at precision ``beta``:

        E(g) = 1/2 ||m ⊙ (x - S g)||^2 + beta/2 ||h - U g||^2 + lam ||g||_1

    Args:
        in_features: ``n``; out_features: ``m``; atoms: ``K``.
        lam: l1 weight (>= 0). beta: precision of the target in ``hebb_step`` (>= 0).
        nonneg: codes ``g >= 0``. max_iter, tol: FISTA budget and stopping tolerance.
        norm_policy: after ``hebb_step``, ``"unit_s"`` rescales each active atom pair so
            ``||s|| = 1`` (``u`` by the same factor), ``"clip_s"`` only when ``||s|| > 1``,
            ``"none"`` leaves them (``docs/vn.md`` section 3). Gradient training is not touched.
        product_form: how FISTA applies the Hessian (``masked_lasso``; ``"auto"``: by shape).
        device, dtype: where and in which floating dtype the parameters are made.

    Parameters ``S`` ``(n, K)`` (columns of unit norm at the start) and ``U`` ``(m, K)``; buffer
    ``unused_batches`` ``(K,)`` (``hebb_step`` batches since each atom was last active).
    """

    def __init__(self, in_features: int, out_features: int, atoms: int, lam: float = 0.05, *, beta: float = 1.0,
                 nonneg: bool = False, max_iter: int = 200, tol: float = 1e-4, norm_policy: str = "unit_s",
                 product_form: str = "auto", device: torch.device | str | None = None,
                 dtype: torch.dtype | None = None):
        for value, name in ((in_features, "in_features"), (out_features, "out_features"), (atoms, "atoms")):
            check_int(value, name)
        _check_solver(lam, max_iter, tol)
        check_positive(beta, "beta", allow_zero=True)
        check_choice(norm_policy, NORM_POLICIES, "norm_policy")
        check_choice(product_form, PRODUCT_FORMS, "product_form")
        super().__init__(in_features, out_features, atoms, factory_dtype(dtype))
        with torch.no_grad():  # unit-norm input atoms: the scale lam is measured against
            self.S /= self.S.norm(dim=0).clamp_min(1e-12)
        self.lam, self.beta, self.nonneg = float(lam), float(beta), bool(nonneg)
        self.max_iter, self.tol, self.norm_policy, self.product_form = max_iter, float(tol), norm_policy, product_form
        _trainable(self, device)

    @property
    def in_features(self) -> int:
        return self.S.shape[0]

    @property
    def out_features(self) -> int:
        return self.U.shape[0]

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, atoms={self.num_atoms}, "
                f"lam={self.lam}, nonneg={self.nonneg}")

    def _inputs(self, x, x_mask) -> tuple[torch.Tensor, torch.Tensor | None, tuple[int, ...]]:
        """``(x (B, n), mask (B, n) or None, leading shape)`` from ``x`` ``(..., n)``."""
        x = check_input(x, "x", self.S, (self.in_features,))
        x_mask = check_mask_like(x_mask, x, "x_mask", "x")
        lead = tuple(x.shape[:-1])
        flat = lambda t: None if t is None else t.reshape(-1, self.in_features)  # noqa: E731
        return flat(x), flat(x_mask), lead

    def forward(self, x: torch.Tensor, x_mask: torch.Tensor | None = None, return_code: bool = False):
        """``x`` ``(B, ..., n)`` (optional 0/1 ``x_mask`` like it) -> ``U g*(x)`` ``(B, ..., m)``;
        with ``return_code`` also the code ``g*`` ``(B, ..., K)``."""
        x2, m2, lead = self._inputs(x, x_mask)
        code, _ = sparse_code(x2, self.S, self.lam, x_mask=m2, nonneg=self.nonneg, max_iter=self.max_iter,
                              tol=self.tol, product_form=self.product_form)
        out = self.message(code).reshape(*lead, self.out_features)
        return (out, code.reshape(*lead, self.num_atoms)) if return_code else out

    # -- the layer energy and local learning -------------------------------------------------------
    def _target(self, target, x2: torch.Tensor) -> torch.Tensor | None:
        if target is None:
            return None
        t = check_input(target, "target", self.S, (self.out_features,))
        if t.numel() // self.out_features != x2.shape[0]:
            raise ValueError(f"target: expected one row per row of x ({x2.shape[0]}), got shape {tuple(t.shape)}")
        return t.reshape(-1, self.out_features)

    def _code_arg(self, code, x2: torch.Tensor) -> torch.Tensor:
        code = check_input(code, "code", self.S, (self.num_atoms,))
        if code.numel() // self.num_atoms != x2.shape[0]:
            raise ValueError(f"code: expected one row per row of x ({x2.shape[0]}), got shape {tuple(code.shape)}")
        return code.reshape(-1, self.num_atoms)

    @torch.no_grad()
    def infer(self, x: torch.Tensor, target: torch.Tensor | None = None, x_mask: torch.Tensor | None = None
              ) -> torch.Tensor:
        """The code minimising the layer energy (class docstring), the target clamped when given:
        ``x`` ``(B, ..., n)``, ``target`` ``(B, ..., m)`` -> ``(B * ..., K)``. No gradient.
        The two terms are solved together as ``VectorNetwork`` solves a layer (``masked_lasso``)."""
        x2, m2, _ = self._inputs(x, x_mask)
        h = self._target(target, x2)
        terms = [LassoTerm(1.0, self.S.detach(), x2, m2)]
        if h is not None and self.beta:
            terms.append(LassoTerm(self.beta, self.U.detach(), h))
        return masked_lasso(terms, self.lam, max_iter=self.max_iter, tol=self.tol, nonneg=self.nonneg,
                            form=self.product_form).codes

    def energy(self, x: torch.Tensor, code: torch.Tensor, target: torch.Tensor | None = None,
               x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The layer energy ``E`` ``(B * ...,)`` at a fixed ``code`` ``(B, ..., K)`` from the
        un-expanded formula; differentiable in ``S`` and ``U`` (autograd of its batch mean is
        what ``hebb_step`` follows)."""
        x2, m2, _ = self._inputs(x, x_mask)
        g, h = self._code_arg(code, x2), self._target(target, x2)
        rx = x2 - self.reconstruct(g)
        e = 0.5 * ((rx if m2 is None else rx * m2) ** 2).sum(-1) + self.lam * g.abs().sum(-1)
        if h is not None and self.beta:
            e = e + 0.5 * self.beta * ((h - self.message(g)) ** 2).sum(-1)
        return e

    @torch.no_grad()
    def optimality_residual(self, x: torch.Tensor, code: torch.Tensor, x_mask: torch.Tensor | None = None
                            ) -> torch.Tensor:
        """The KKT residual ``(B * ...,)`` of ``forward``'s LASSO at ``code`` (0 at its solution;
        ``hebbnets.vn.fista.kkt_violation`` on the un-expanded gradient)."""
        x2, m2, _ = self._inputs(x, x_mask)
        g = self._code_arg(code, x2)
        r = x2 - self.reconstruct(g)
        return kkt_violation(-((r if m2 is None else r * m2) @ self.S), g, self.lam, self.nonneg)

    @torch.no_grad()
    def hebb_step(self, x: torch.Tensor, target: torch.Tensor | None = None, *, x_mask: torch.Tensor | None = None,
                  code: torch.Tensor | None = None, lr: float = 0.5) -> dict[str, torch.Tensor]:
        """One Atomic-Hebb step (``docs/vn.md`` section 3), no backprop:

            S += lr mean_b (m ⊙ (x - S g)) g^T,     U += lr beta mean_b (h - U g) g^T

        at ``code`` (default: ``infer(x, target, x_mask)``), i.e. ``-lr`` times the gradient of
        the batch-mean layer energy in ``(S, U)`` at the fixed code; without a target ``U`` does
        not move. Then the norm policy on the atoms active in the batch; inactive atoms keep their
        exact bits.

        Args:
            x: ``(B, ..., n)``; target: optional ``(B, ..., m)``; x_mask: optional 0/1 like ``x``.
            code: optional ``(B, ..., K)`` code to learn from. lr: the rate ``rho`` (>= 0).
        Returns:
            ``{"S": dS (n, K), "U": dU (m, K), "code": (B * ..., K)}``: the raw updates before the
            norm policy, and the code used.
        """
        check_positive(lr, "lr", allow_zero=True)
        x2, m2, _ = self._inputs(x, x_mask)
        h = self._target(target, x2)
        g = self.infer(x, target, x_mask) if code is None else self._code_arg(code, x2)
        rx = x2 - self.reconstruct(g)
        rx = rx if m2 is None else rx * m2  # (B, n)
        rh = self.beta * (h - self.message(g)) if h is not None and self.beta else None  # (B, m)
        dS, dU, _ = self.hebb_update(rx, rh, g, lr, lr, self.norm_policy)  # VectorNetwork's own step
        return {"S": dS, "U": dU, "code": g}


# --- matrix codes ------------------------------------------------------------------------------------
class MatrixAtomLayer(_MatrixLibrary):
    """Matrix-valued atoms ``u_a s_b^T`` for every pairing of ``U`` ``(m, Ku)`` and ``S``
    ``(n, Ks)`` (``hebbnets.vn.MatrixAtomLayer``): an image ``x`` ``(m, n)`` gets the sparse
    matrix code

        G*(x) = argmin_G 1/2 ||P ⊙ (x - U G S^T)||^2 + lam ||G||_1      (B, Ku, Ks)

    (``P`` an optional 0/1 mask of observed pixels), and the output is the composed operator
    ``W* = U G* S^T`` ``(B, m, n)``. The LASSO's Hessian ``(S^T S) (x) (U^T U)`` is never formed:
    FISTA and the implicit backward (conjugate gradients on each sample's active set) apply it as
    two small products. ``hebb_step`` is the parent's Atomic-Hebb step.

    Args:
        in_shape: ``(m, n)``; atoms: ``(Ku, Ks)``; lam: l1 weight; nonneg: codes >= 0.
        max_iter, tol: FISTA budget and tolerance.
        norm_policy: after ``hebb_step``, ``"unit"`` rescales the active code vectors to unit
            norm, ``"clip"`` only longer ones, ``"none"``.
        device, dtype: as ``VNLayer``.
    """

    def __init__(self, in_shape: tuple[int, int], atoms: tuple[int, int], lam: float = 0.05, *,
                 nonneg: bool = False, max_iter: int = 200, tol: float = 1e-4, norm_policy: str = "unit",
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        for value, name in ((in_shape, "in_shape"), (atoms, "atoms")):
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise ValueError(f"{name}: expected a pair of ints, got {value!r}")
            for v in value:
                check_int(v, name)
        _check_solver(lam, max_iter, tol)
        check_choice(norm_policy, PAIR_NORM_POLICIES, "norm_policy")
        super().__init__(int(in_shape[0]), int(in_shape[1]), int(atoms[0]), int(atoms[1]), factory_dtype(dtype))
        self.lam, self.nonneg, self.max_iter, self.tol = float(lam), bool(nonneg), max_iter, float(tol)
        self.norm_policy = norm_policy
        _trainable(self, device)

    def extra_repr(self) -> str:
        return f"in_shape={self.image_shape}, atoms={self.code_shape}, lam={self.lam}, nonneg={self.nonneg}"

    def _images(self, x, x_mask) -> tuple[torch.Tensor, torch.Tensor | None]:
        x = check_input(x, "x", self.U, self.image_shape, ndim=3)
        return x, check_mask_like(x_mask, x, "x_mask", "x")

    def forward(self, x: torch.Tensor, x_mask: torch.Tensor | None = None, return_code: bool = False):
        """``x`` ``(B, m, n)`` (optional 0/1 ``x_mask`` like it) -> ``U G* S^T`` ``(B, m, n)``;
        with ``return_code`` also ``G*`` ``(B, Ku, Ks)``. Gradients reach ``x``, ``U`` and ``S``."""
        x, P = self._images(x, x_mask)
        res = self.infer(x, P, lam=self.lam, nonneg=self.nonneg, max_iter=self.max_iter, tol=self.tol)
        # d(G) = -U^T (P ⊙ (x - U G S^T)) S, through the parent's products (differentiable in x, U, S)
        code = implicit_lasso(res.codes, self.lam, lambda G: -self.correlate(self.residual(x, G, P)),
                              lambda: self.hessian(P), x, self.U, self.S)
        out = self.compose(code)
        return (out, code) if return_code else out

    @torch.no_grad()
    def hebb_step(self, x: torch.Tensor, *, x_mask: torch.Tensor | None = None, code: torch.Tensor | None = None,
                  lr: float = 0.5) -> dict[str, torch.Tensor]:
        """One Atomic-Hebb step ``U += lr mean R S G^T``, ``S += lr mean R^T U G`` with
        ``R = P ⊙ (x - U G S^T)`` at ``code`` (default: ``forward``'s code), i.e. ``-lr`` times the
        gradient of the batch-mean energy ``self.energy(x, code, self.lam, x_mask)`` at the fixed
        code; then the norm policy on the active code vectors (``hebbnets.vn.MatrixAtomLayer``).

        Returns ``{"U": dU (m, Ku), "S": dS (n, Ks), "code": (B, Ku, Ks)}`` (raw updates)."""
        check_positive(lr, "lr", allow_zero=True)
        x, P = self._images(x, x_mask)
        if code is None:
            code = self.infer(x, P, lam=self.lam, nonneg=self.nonneg, max_iter=self.max_iter, tol=self.tol).codes
        else:
            code = check_input(code, "code", self.U, self.code_shape, ndim=3)
        upd = self.atomic_hebb(x, code, P, rho_u=lr, rho_s=lr, norm_policy=self.norm_policy)
        return {**upd, "code": code}


# --- applied weights ---------------------------------------------------------------------------------
class AppliedAtomLayer(AppliedAtomStack):
    """An applied-weight layer (``hebbnets.vn.applied``): a context ``c`` ``(B, p)`` selects a sparse
    code, and the code's composed weight ``W*(g) = U diag(g) S^T`` is applied to a content ``z``:

        g*(c) = argmin_g alpha/2 ||m_c ⊙ (c - C g)||^2 + lam ||g||_1      (B, K)
        y     = W*(g*) z = U (g* ⊙ S^T z)        (plus z with residual=True)

    ``forward`` returns ``y``; gradients reach ``z``, ``c``, ``S``, ``U`` and ``C``. ``hebb_step``
    is the VN learning phase of ``vn_applied``: the code inferred with the target ``y`` clamped
    (precision ``beta``) next to the context, then Atomic-Hebb on ``U``, ``S`` and ``C``
    (``AppliedAtomStack.atomic_hebb``).

    Args:
        in_features: content size ``n``; out_features: ``m``; context_features: ``p`` (>= 1);
            atoms: ``K``.
        lam: l1 weight; alpha: context precision; beta: target precision in ``hebb_step``.
        residual: the layer is ``I + W*`` (needs ``n == m``; a zero code is the identity).
        nonneg, max_iter, tol: as ``VNLayer``. norm_policy: ``"unit"`` (every active atom's
            ``s_k`` and ``c_k`` to norm 1), ``"clip"``, ``"none"``. product_form: as ``VNLayer``,
            for the context LASSO of ``forward``.
        device, dtype: as ``VNLayer``.

    The one layer's parameters are ``self.S`` ``(n, K)``, ``self.U`` ``(m, K)``, ``self.C``
    ``(p, K)`` (``self.layers[0]``).
    """

    def __init__(self, in_features: int, out_features: int, context_features: int, atoms: int, lam: float = 0.05, *,
                 alpha: float = 1.0, beta: float = 1.0, residual: bool = False, nonneg: bool = False,
                 max_iter: int = 200, tol: float = 1e-4, norm_policy: str = "unit", product_form: str = "auto",
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        for value, name in ((in_features, "in_features"), (out_features, "out_features"),
                            (context_features, "context_features"), (atoms, "atoms")):
            check_int(value, name)
        _check_solver(lam, max_iter, tol)
        check_choice(norm_policy, PAIR_NORM_POLICIES, "norm_policy")
        check_choice(product_form, PRODUCT_FORMS, "product_form")
        super().__init__((in_features, out_features), (atoms,), context_dim=context_features, alpha=alpha, beta=beta,
                         lam=lam, nonneg=nonneg, residual=residual, max_iter=max_iter, tol=tol,
                         dtype=factory_dtype(dtype))
        self.norm_policy, self.product_form = norm_policy, product_form
        _trainable(self, device)

    @property
    def S(self) -> torch.Tensor:
        return self.layers[0].S

    @property
    def U(self) -> torch.Tensor:
        return self.layers[0].U

    @property
    def C(self) -> torch.Tensor:
        return self.layers[0].C

    def extra_repr(self) -> str:
        return (f"in_features={self.S.shape[0]}, out_features={self.U.shape[0]}, context_features={self.C.shape[0]}, "
                f"atoms={self.S.shape[1]}, lam={self.lam}, residual={self.layers[0].residual}")

    def _context(self, c, c_mask, batch: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        c = check_input(c, "c", self.C, (self.C.shape[0],), ndim=2)
        if c.shape[0] != batch:
            raise ValueError(f"c: has {c.shape[0]} samples but z has {batch}")
        return c, check_mask_like(c_mask, c, "c_mask", "c")

    def _content(self, z) -> torch.Tensor:
        n = self.S.shape[0]
        if isinstance(z, torch.Tensor) and z.ndim not in (2, 3):
            raise ValueError(f"z: expected shape (B, {n}) or (B, R, {n}), got {tuple(z.shape)}")
        return check_input(z, "z", self.S, (n,))

    def forward(self, z: torch.Tensor, c: torch.Tensor, c_mask: torch.Tensor | None = None,
                return_code: bool = False):
        """Content ``z`` ``(B, n)`` or ``(B, R, n)`` (rows sharing one code), context ``c``
        ``(B, p)`` (optional 0/1 ``c_mask`` like it) -> ``W*(g*(c)) z`` ``(B, m)`` or
        ``(B, R, m)``; with ``return_code`` also ``g*`` ``(B, K)``."""
        z = self._content(z)
        c, c_mask = self._context(c, c_mask, z.shape[0])
        code, _ = sparse_code(c, self.C, self.lam, x_mask=c_mask, weight=self.alpha, nonneg=self.nonneg,
                              max_iter=self.max_iter, tol=self.tol, product_form=self.product_form)
        out = self.layers[0].apply(code, z if z.ndim == 3 else z[:, None, :])
        out = out if z.ndim == 3 else out[:, 0]
        return (out, code) if return_code else out

    @torch.no_grad()
    def hebb_step(self, z: torch.Tensor, c: torch.Tensor, y: torch.Tensor, *, c_mask: torch.Tensor | None = None,
                  y_mask: torch.Tensor | None = None, lr: float = 0.5) -> dict[str, torch.Tensor]:
        """One Atomic-Hebb step on ``(z, c, y)``: the code of the free energy with context and target
        clamped (``AppliedAtomStack.infer``), then ``X += lr dX`` for ``X`` in ``U, S, C`` with
        ``dX = -d mean_b F / dX`` at that code, then the norm policy on the active atoms.

        Args:
            z: ``(B, n)`` or ``(B, R, n)``; c: ``(B, p)``; y: ``(B, m)`` or ``(B, R, m)``;
            c_mask, y_mask: optional 0/1 masks; lr: the rate (>= 0).
        Returns:
            ``{"U": (m, K), "S": (n, K), "C": (p, K), "code": (B, K)}``: the directions ``dX``
            (before ``lr`` and the norm policy) and the code.
        """
        check_positive(lr, "lr", allow_zero=True)
        z = self._content(z)
        self._context(c, c_mask, z.shape[0])
        check_input(y, "y", self.U, (self.U.shape[0],))
        inf = self.infer(z, c, y, c_mask, y_mask)
        upd = self.atomic_hebb(inf, rho_u=lr, rho_s=lr, rho_c=lr, norm_policy=self.norm_policy)
        return {**upd[0], "code": inf.codes[0]}


__all__ = ["AppliedAtomLayer", "MatrixAtomLayer", "VNLayer", "rescale_atoms"]
