"""Applied-weight atom layers: the composed effective weight acts on a content input.

The VN's effective weight ``W*`` taken literally as the operator a sample applies (the
"applied-weight" reading of composition in weight space): a sample is split into a *context*
``c`` that determines a sparse code ``g`` and a *content* ``z`` that the code's effective weight
is applied to::

    W*(g) = U diag(g) S^T = sum_k g_k u_k s_k^T          (m x n)
    y_hat = W*(g) z = U (g ⊙ S^T z)

A layer owns ``K`` atoms: an input-side vector ``s_k`` (``S`` ``(n, K)``), an output-side vector
``u_k`` (``U`` ``(m, K)``) and, when there is a context, a context vector ``c_k`` (``C`` ``(p, K)``).
With ``residual=True`` a layer is ``I + W*(g)`` (``n == m``): a zero code is the identity.
``L`` layers stack into the product ``y_hat = W*_L(g_L) ... W*_1(g_1) z`` (composition of effective
weights), their context vectors add: ``C_1 g_1 + ... + C_L g_L`` explains ``c``.

Free energy of one sample with ``R`` content rows ``z_r`` and target rows ``y_r`` (``R = 1`` for
one content vector; a set of rows, e.g. bodies x time steps, shares one code)::

    F(g_1..g_L) = alpha/2 ||m_c ⊙ (c - sum_l C_l g_l)||^2          context term (optional)
                + beta/2 sum_r ||m_r ⊙ (y_r - y_hat_r)||^2          output term (y clamped)
                + lam sum_l ||g_l||_1

Inference: for one layer with the others fixed, ``F`` is a LASSO in ``g_l`` whose output design
is ``U~ diag(w_r)`` with ``w_r = S_l^T z~_r`` (``z~`` the content after the layers below, ``U~``
the output vectors seen through the layers above: ``U`` itself for the top layer). Its Hessian
is applied as an operator (``hebbnets.vn.fista``)::

    H v = alpha C^T (m_c ⊙ (C v)) + beta sum_r w_r ⊙ (U~^T (m_r ⊙ (U~ (w_r ⊙ v))))

in one of three product forms, chosen by their cost (``path="auto"``):

* ``"factor"``: as written, ``2 R m K`` per sample and iteration (any mask); cheapest when
  the output is small (``m < K / 2``, e.g. a 4-dim state change);
* ``"gram"``: ``w_r ⊙ ((w_r ⊙ v) @ U^T U)`` with one shared ``(K, K)`` Gram matrix,
  ``R K^2`` per sample and iteration (top layer, row masks only);
* ``"per_sample"``: the per-sample Gram matrix ``(U~^T U~) ⊙ (W^T diag(m) W)`` formed once
  (``R K^2`` per sample, ``B K^2`` memory), then ``K^2`` per iteration: cheaper than the others
  when one code explains many rows (``R`` large) and the output is not small, because the rows
  are summed into the Gram matrix once instead of at every iteration. Its per-iteration product
  is a batched matrix-vector product, which streams ``B K^2`` numbers from memory each time; the
  cost model counts it ``MATVEC_PENALTY`` times a GEMM's multiply-adds (measured:
  ``benchmarks/vn_applied_paths.py``).

The Lipschitz constant starts from a guaranteed upper bound per sample (Schur product theorem:
``lambda_max(A ⊙ B) <= min(max_k A_kk lambda_max(B), lambda_max(A) max_k B_kk)``, with
``A = U~^T U~`` and ``B = W^T diag(m) W``), tightened by a few power iterations on the operator
(the bound can be several times too large, which slows FISTA by its square root).
Stacks are solved by block coordinate descent over layers (each block exactly, warm-started),
so ``F`` never increases.

Learning (Atomic-Hebb, the negative gradient of ``F`` at the inferred codes, Danskin): with the
precision-weighted output residual ``r = beta m ⊙ (y - y_hat)`` passed down through the layers
above (``r~_l = W*_{l+1}^T ... W*_L^T r``) and ``e = alpha m_c ⊙ (c - sum_l C_l g_l)``::

    dU_l = rho_u mean_b sum_r r~_r (g_l ⊙ S_l^T z~_r)^T
    dS_l = rho_s mean_b sum_r z~_r (g_l ⊙ U_l^T r~_r)^T
    dC_l = rho_c mean_b e g_l^T

An atom whose code is zero for the whole batch gets an exactly zero update and is left alone by
the norm policy (bit-for-bit unchanged). ``reference_codes`` solves the same problems one sample
at a time with an explicit design matrix (the slow reference the tests compare against).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from .._validation import check_choice, check_int, check_positive
from .fista import fista, fista_gram, ista_reference, kkt_violation, largest_eigenvalue

PATHS = ("auto", "factor", "gram", "per_sample")
NORM_POLICIES = ("unit", "clip", "none")
# the per-sample path keeps a (B, K, K) Gram matrix: only below this many entries
PER_SAMPLE_MAX_ENTRIES = 2**26
# relative cost of a batched matrix-vector product against a GEMM of equal multiply-adds
# (``benchmarks/vn_applied_paths.py`` measures the forms against each other)
MATVEC_PENALTY = 8
# the Lipschitz constant used is min(guaranteed bound, POWER_SAFETY x power-iteration estimate)
POWER_SAFETY = 1.02
# rows of one code beyond which lambda_max(W^T diag(m) W) is bounded by its trace instead of an
# (R, R) eigenvalue problem
EXACT_ROW_SPECTRUM_MAX_ROWS = 64


class AppliedAtomLayer(nn.Module):
    """``K`` rank-1 atoms ``u_k s_k^T`` applied to a content vector: ``R^n -> R^m``.

    Parameters (learned by Atomic-Hebb, ``requires_grad=False``): ``S`` ``(n, K)``, ``U``
    ``(m, K)`` and, with ``context_dim = p > 0``, ``C`` ``(p, K)``. With ``residual=True`` the
    layer maps ``z -> z + U (g ⊙ S^T z)`` (needs ``n == m``).
    """

    def __init__(self, n: int, m: int, k: int, context_dim: int = 0, residual: bool = False,
                 context_rows: torch.Tensor | None = None, dtype: torch.dtype = torch.float32):
        super().__init__()
        for value, name in ((n, "n"), (m, "m"), (k, "k")):
            check_int(value, name)
        check_int(context_dim, "context_dim", minimum=0)
        if residual and n != m:
            raise ValueError(f"residual: a residual layer needs n == m, got n={n}, m={m}")
        self.residual = bool(residual)
        self.S = nn.Parameter(torch.randn(n, k, dtype=dtype) / n**0.5, requires_grad=False)  # (n, K)
        self.U = nn.Parameter(torch.randn(m, k, dtype=dtype) / m**0.5, requires_grad=False)  # (m, K)
        self.C = None
        if context_dim:
            rows = torch.ones(context_dim, dtype=dtype) if context_rows is None else context_rows.to(dtype)
            if tuple(rows.shape) != (context_dim,) or not bool(((rows == 0) | (rows == 1)).all()) or not bool(rows.any()):
                raise ValueError(f"context_rows: expected a 0/1 ({context_dim},) mask with a 1, got {tuple(rows.shape)}")
            # which context entries this layer's atoms explain (the others stay exactly zero in C)
            self.register_buffer("context_rows", rows)
            C = torch.randn(context_dim, k, dtype=dtype) / context_dim**0.5 * rows[:, None]
            self.C = nn.Parameter(C, requires_grad=False)  # (p, K)
        # batches since each atom last had a non-zero code (drives re-seeding)
        self.register_buffer("unused_batches", torch.zeros(k, dtype=torch.long))

    @property
    def num_atoms(self) -> int:
        return self.S.shape[1]

    @property
    def context_dim(self) -> int:
        return 0 if self.C is None else self.C.shape[0]

    def apply(self, g: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``W*(g) z`` (plus ``z`` if residual): ``g`` ``(B, K)``, ``z`` ``(B, R, n)`` -> ``(B, R, m)``."""
        out = ((z @ self.S) * g[:, None, :]) @ self.U.T
        return out + z if self.residual else out

    def apply_transposed(self, g: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """``W*(g)^T r`` (plus ``r`` if residual): ``(B, K)``, ``(B, R, m)`` -> ``(B, R, n)``."""
        out = ((r @ self.U) * g[:, None, :]) @ self.S.T
        return out + r if self.residual else out

    def effective_weight(self, g: torch.Tensor) -> torch.Tensor:
        """``W*(g) = U diag(g) S^T`` (plus ``I`` if residual): ``(B, K) -> (B, m, n)``."""
        w = torch.einsum("mk,bk,nk->bmn", self.U, g, self.S)
        return w + torch.eye(w.shape[-1], dtype=w.dtype, device=w.device) if self.residual else w


@dataclass
class AppliedInference:
    """Result of ``AppliedAtomStack.infer`` for a batch of ``B`` samples.

    Attributes:
        codes: per layer ``(B, K_l)``.
        z, c, y: the clamped content ``(B, R, n)``, context ``(B, p)`` and target ``(B, R, m)``
            (``c``/``y`` ``None`` when absent), with their masks ``c_mask`` ``(B, p)`` and
            ``y_mask`` ``(B, R, m)`` or ``(B, R, 1)`` (``None`` = all observed).
        energy: free energy ``F`` ``(B,)`` at the codes.
        iterations: FISTA iterations summed over all block solves.
        sweeps: block-coordinate sweeps over the layers (0 for one layer).
        converged: every solve of the last sweep met ``tol`` (and, for stacks, the sweeps did).
        energy_history: batch-mean ``F`` after the initial pass and after every sweep.
        paths: the product form each layer's last solve used.
    """

    codes: list[torch.Tensor]
    z: torch.Tensor
    c: torch.Tensor | None
    y: torch.Tensor | None
    c_mask: torch.Tensor | None
    y_mask: torch.Tensor | None
    energy: torch.Tensor
    iterations: int
    sweeps: int
    converged: bool
    energy_history: list[float] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@dataclass
class _Block:
    """One layer's LASSO with the other layers fixed (see module docstring)."""

    w: torch.Tensor  # (B, R, K) S_l^T z~_r
    lib: torch.Tensor  # (m, K) shared or (B, m, K) per-sample output vectors U~
    target: torch.Tensor | None  # (B, R, m) what the layer's atoms must explain (None: no output term)
    y_mask: torch.Tensor | None  # (B, R, m) entry mask or (B, R, 1) row mask
    C: torch.Tensor | None  # (p, K)
    c_target: torch.Tensor | None  # (B, p) context minus the other layers' part
    c_mask: torch.Tensor | None  # (B, p)
    alpha: float
    beta: float

    @property
    def row_mask_only(self) -> bool:
        return self.y_mask is None or self.y_mask.shape[-1] == 1

    def b(self) -> torch.Tensor:
        """Linear term ``alpha C^T (m_c ⊙ c~) + beta sum_r w_r ⊙ U~^T (m_r ⊙ t_r)`` ``(B, K)``."""
        B, _, K = self.w.shape
        out = self.w.new_zeros(B, K)
        if self.C is not None and self.c_target is not None and self.alpha:
            cm = self.c_target if self.c_mask is None else self.c_target * self.c_mask
            out = out + self.alpha * (cm @ self.C)
        if self.target is not None and self.beta:
            t = self.target if self.y_mask is None else self.target * self.y_mask
            out = out + self.beta * (_lib_t(self.lib, t) * self.w).sum(1)
        return out

    def choose_path(self, path: str, max_iter: int) -> str:
        """The cheapest applicable product form (module docstring) for ``max_iter`` iterations."""
        if self.target is None or not self.beta:
            return "factor"  # context only: no output term to form
        B, R, K = self.w.shape
        m = self.lib.shape[-2]
        shared = self.lib.ndim == 2
        allowed = ["factor"]
        if self.row_mask_only:
            if shared:
                allowed.append("gram")
            if B * K * K <= PER_SAMPLE_MAX_ENTRIES:
                allowed.append("per_sample")
        if path != "auto":
            if path not in allowed:
                raise ValueError(f"path: {path!r} does not apply here (entry masks or a per-sample output "
                                 f"library allow only {allowed})")
            return path
        # multiply-adds per sample; a product with a per-sample matrix and few rows is a batched
        # matrix-vector product that streams the matrix from memory at every use, while a shared
        # matrix is reused across the batch by one GEMM: such products count MATVEC_PENALTY times
        few_rows = max(1.0, MATVEC_PENALTY / R)
        cost = {
            "factor": max_iter * 2 * R * m * K * (1.0 if shared else few_rows),
            "gram": max_iter * R * K * K + m * K * K / B,
            "per_sample": R * K * K + (0 if shared else m * K * K) + max_iter * K * K * MATVEC_PENALTY,
        }
        return min(allowed, key=lambda p: cost[p])

    def hessian(self, path: str) -> tuple[object, torch.Tensor | None]:
        """``(operator, per-sample Gram or None)`` for ``path``."""
        C, cm, alpha, beta, w = self.C, self.c_mask, self.alpha, self.beta, self.w
        has_ctx = C is not None and self.c_target is not None and bool(alpha)
        has_out = self.target is not None and bool(beta)

        def ctx(v: torch.Tensor) -> torch.Tensor:
            cv = v @ C.T  # (B, p)
            return alpha * ((cv if cm is None else cv * cm) @ C)

        if path == "per_sample":
            G = beta * _gram_of(self.lib) * _row_gram(w, self.y_mask)  # (B, K, K)
            if has_ctx:
                G = G + alpha * (torch.einsum("pk,bp,pj->bkj", C, cm, C) if cm is not None else C.T @ C)
            return (lambda v: torch.bmm(G, v.unsqueeze(-1)).squeeze(-1)), G
        if path == "gram":
            UtU = self.lib.T @ self.lib  # (K, K)
            rm = None if self.y_mask is None else self.y_mask  # (B, R, 1)

            def out(v: torch.Tensor) -> torch.Tensor:
                wv = w * v[:, None, :]  # (B, R, K)
                if rm is not None:
                    wv = wv * rm
                return beta * (w * (wv @ UtU)).sum(1)
        else:
            ym = self.y_mask

            def out(v: torch.Tensor) -> torch.Tensor:
                pred = _lib_apply(self.lib, w * v[:, None, :])  # (B, R, m)
                if ym is not None:
                    pred = pred * ym
                return beta * (w * _lib_t(self.lib, pred)).sum(1)

        def op(v: torch.Tensor) -> torch.Tensor:
            acc = torch.zeros_like(v)
            if has_ctx:
                acc = acc + ctx(v)
            if has_out:
                acc = acc + out(v)
            return acc

        return op, None

    def lipschitz(self) -> torch.Tensor:
        """Guaranteed per-sample upper bound ``(B,)`` on ``lambda_max(H)`` (module docstring);
        the shared ``C^T C`` and ``U^T U`` spectra come from power iteration, to which ``fista``
        adds its 1% margin."""
        B, R, K = self.w.shape
        lip = self.w.new_zeros(B)
        if self.C is not None and self.c_target is not None and self.alpha:
            small = self.C @ self.C.T if self.C.shape[0] < K else self.C.T @ self.C  # same top eigenvalue
            lip = lip + self.alpha * largest_eigenvalue(small)
        if self.target is not None and self.beta:
            w = self.w if self.y_mask is None else self.w * self.y_mask.amax(-1, keepdim=True)  # (B, R, K)
            col_norms = (self.lib**2).sum(-2)  # (K,) or (B, K): diagonal of U~^T U~
            if R <= EXACT_ROW_SPECTRUM_MAX_ROWS:
                row_top = torch.linalg.eigvalsh(w @ w.transpose(1, 2))[:, -1].clamp_min(0)  # (B,)
            else:
                row_top = (w**2).sum((1, 2))  # trace >= lambda_max
            bound = col_norms.amax(-1) * row_top  # (B,)
            if self.lib.ndim == 2:
                bound = torch.minimum(bound, largest_eigenvalue(self.lib.T @ self.lib) * (w**2).sum(1).amax(-1))
            lip = lip + self.beta * bound
        return lip

    def smooth_gradient(self, g: torch.Tensor) -> torch.Tensor:
        """Gradient of the block's smooth part at ``g``, from the un-expanded residuals ``(B, K)``."""
        grad = torch.zeros_like(g)
        if self.C is not None and self.c_target is not None and self.alpha:
            e = self.c_target - g @ self.C.T
            grad = grad - self.alpha * ((e if self.c_mask is None else e * self.c_mask) @ self.C)
        if self.target is not None and self.beta:
            r = self.target - _lib_apply(self.lib, self.w * g[:, None, :])
            if self.y_mask is not None:
                r = r * self.y_mask
            grad = grad - self.beta * (self.w * _lib_t(self.lib, r)).sum(1)
        return grad


def _lib_apply(lib: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``U~ v`` per row: ``lib`` ``(m, K)`` or ``(B, m, K)``, ``v`` ``(B, R, K)`` -> ``(B, R, m)``."""
    return v @ (lib.T if lib.ndim == 2 else lib.transpose(1, 2))


def _lib_t(lib: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """``U~^T r`` per row: ``(B, R, m)`` -> ``(B, R, K)``."""
    return r @ lib


def _gram_of(lib: torch.Tensor) -> torch.Tensor:
    """``U~^T U~``: ``(K, K)`` or ``(B, K, K)``."""
    return lib.T @ lib if lib.ndim == 2 else lib.transpose(1, 2) @ lib


def _row_gram(w: torch.Tensor, y_mask: torch.Tensor | None) -> torch.Tensor:
    """``W^T diag(m) W`` ``(B, K, K)`` from rows ``w`` ``(B, R, K)`` and a row mask ``(B, R, 1)``."""
    wm = w if y_mask is None else w * y_mask
    return wm.transpose(1, 2) @ w


def _power_estimate(op, B: int, K: int, dtype: torch.dtype, n_iter: int,
                    device: torch.device | None = None) -> torch.Tensor:
    """Per-sample ``lambda_max`` ``(B,)`` of the operator by power iteration from a fixed positive
    start (the Rayleigh quotient; approaches the eigenvalue from below)."""
    gen = torch.Generator().manual_seed(0)
    v = (torch.rand(K, generator=gen, dtype=torch.float64, device=gen.device) + 0.5).to(device=device, dtype=dtype).expand(B, K).clone()
    for _ in range(n_iter):
        w = op(v)
        v = w / w.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(dtype).tiny)
    return (v * op(v)).sum(-1)


class AppliedAtomStack(nn.Module):
    """``L`` applied-weight layers composed as ``W*_L ... W*_1``, with inference and learning.

    Args:
        sizes: ``(n_1, n_2, ..., n_{L+1})`` content size, interface sizes, output size.
        atoms: ``(K_1, ..., K_L)``.
        context_dim: ``p`` (0 = no context term).
        alpha: context precision; beta: output precision; lam: l1 weight.
        nonneg: codes ``g >= 0``. residual: every layer is ``I + W*`` (needs equal sizes).
        max_iter: FISTA iterations per block solve; max_sweeps: block sweeps for stacks;
        tol: FISTA and sweep tolerance; path: product form (module docstring).
        context_rows: optional per-layer 0/1 masks ``(p,)`` of the context entries each layer's
            atoms explain (default: all); the contexts still add, so disjoint masks route each
            part of the context to one layer.
        power_iterations: per-sample power iterations on the Hessian operator that tighten the
            guaranteed Lipschitz bound (which can be loose by several times; each costs about one
            FISTA iteration); the constant used is ``min(bound, 1.02 x estimate)`` (``fista`` adds
            1%). 0 = the bound alone.
        dtype: parameter dtype.

    ``fused`` (an attribute): FISTA's loop (``hebbnets.vn.fista.resolve_fused``), as on
    ``MatrixAtomLayer``.
    """

    fused: bool | str = "auto"

    def __init__(self, sizes: tuple[int, ...], atoms: tuple[int, ...], context_dim: int = 0, alpha: float = 1.0,
                 beta: float = 1.0, lam: float = 0.05, nonneg: bool = False, residual: bool = False,
                 max_iter: int = 200, max_sweeps: int = 10, tol: float = 1e-4, path: str = "auto",
                 power_iterations: int = 30, context_rows: list[torch.Tensor] | None = None,
                 dtype: torch.dtype = torch.float32):
        super().__init__()
        if len(sizes) != len(atoms) + 1 or not atoms:
            raise ValueError(f"sizes: expected {len(atoms) + 1} sizes for {len(atoms)} layer(s), got {tuple(sizes)}")
        for v, name in ((alpha, "alpha"), (beta, "beta"), (lam, "lam"), (tol, "tol")):
            check_positive(v, name, allow_zero=name != "tol")
        check_int(max_iter, "max_iter")
        check_int(max_sweeps, "max_sweeps")
        check_int(power_iterations, "power_iterations", minimum=0)
        check_choice(path, PATHS, "path")
        if context_rows is not None and len(context_rows) != len(atoms):
            raise ValueError(f"context_rows: expected one mask per layer ({len(atoms)}), got {len(context_rows)}")
        rows = context_rows or [None] * len(atoms)
        self.layers = nn.ModuleList(
            AppliedAtomLayer(sizes[i], sizes[i + 1], k, context_dim, residual, rows[i], dtype) for i, k in enumerate(atoms)
        )
        self.alpha, self.beta, self.lam = float(alpha), float(beta), float(lam)
        self.nonneg, self.max_iter, self.max_sweeps, self.tol, self.path = nonneg, max_iter, max_sweeps, tol, path
        self.power_iterations = power_iterations

    @property
    def dtype(self) -> torch.dtype:
        return self.layers[0].S.dtype

    @property
    def context_dim(self) -> int:
        return self.layers[0].context_dim

    # -- products --------------------------------------------------------------------------------
    def contents(self, codes: list[torch.Tensor], z: torch.Tensor) -> list[torch.Tensor]:
        """``[z~_1, ..., z~_{L+1}]``: the content entering each layer, and the output ``(B, R, .)``."""
        out = [z]
        for layer, g in zip(self.layers, codes):
            out.append(layer.apply(g, out[-1]))
        return out

    def output(self, codes: list[torch.Tensor], z: torch.Tensor) -> torch.Tensor:
        """``y_hat = W*_L ... W*_1 z``: ``z`` ``(B, R, n_1)`` -> ``(B, R, m)``."""
        return self.contents(codes, z)[-1]

    def effective_weight(self, codes: list[torch.Tensor]) -> torch.Tensor:
        """The composed weight ``W*_L ... W*_1`` ``(B, m, n_1)`` (an inspection object)."""
        w = self.layers[0].effective_weight(codes[0])
        for layer, g in zip(self.layers[1:], codes[1:]):
            w = layer.effective_weight(g) @ w
        return w

    def _upper(self, codes: list[torch.Tensor], l: int, v: torch.Tensor) -> torch.Tensor:
        """Layers above ``l`` applied to ``v`` ``(B, R, m_l)``."""
        for layer, g in zip(self.layers[l + 1:], codes[l + 1:]):
            v = layer.apply(g, v)
        return v

    def context_part(self, codes: list[torch.Tensor], skip: int | None = None) -> torch.Tensor:
        """``sum_l C_l g_l`` ``(B, p)``, leaving out layer ``skip``."""
        return sum(g @ layer.C.T for i, (layer, g) in enumerate(zip(self.layers, codes)) if i != skip)

    # -- checks ------------------------------------------------------------------------------------
    def _prepare(self, z, c, y, c_mask, y_mask):
        """Validate and bring inputs to ``(B, R, .)`` layout and this stack's dtype."""
        n, m, p = self.layers[0].S.shape[0], self.layers[-1].U.shape[0], self.context_dim
        if not isinstance(z, torch.Tensor) or z.ndim not in (2, 3) or z.shape[0] == 0 or z.shape[-1] != n:
            raise ValueError(f"z: expected a non-empty (B, {n}) or (B, R, {n}) tensor, got "
                             f"{tuple(z.shape) if isinstance(z, torch.Tensor) else type(z).__name__}")
        if not bool(torch.isfinite(z).all()):
            raise ValueError("z: contains NaN or Inf")
        z = z.to(self.dtype)
        z = z[:, None, :] if z.ndim == 2 else z
        B, R = z.shape[:2]
        if c is not None:
            if p == 0:
                raise ValueError("c: this stack has no context library (context_dim=0)")
            if tuple(c.shape) != (B, p) or not bool(torch.isfinite(c).all()):
                raise ValueError(f"c: expected a finite ({B}, {p}) tensor, got shape {tuple(c.shape)}")
            c = c.to(self.dtype)
            if c_mask is not None:
                if tuple(c_mask.shape) != (B, p):
                    raise ValueError(f"c_mask: expected shape ({B}, {p}), got {tuple(c_mask.shape)}")
                c_mask = c_mask.to(self.dtype)
        elif c_mask is not None:
            raise ValueError("c_mask: given without a context c")
        if y is not None:
            y = y.to(self.dtype)
            y = y[:, None, :] if y.ndim == 2 else y
            if tuple(y.shape) != (B, R, m) or not bool(torch.isfinite(y).all()):
                raise ValueError(f"y: expected a finite ({B}, {m}) or ({B}, {R}, {m}) tensor like z's rows, "
                                 f"got shape {tuple(y.shape)}")
            if y_mask is not None:
                y_mask = y_mask.to(self.dtype)
                if y_mask.ndim == 2 and R > 1:
                    y_mask = y_mask[..., None]  # (B, R) row mask
                elif y_mask.ndim == 2:
                    y_mask = y_mask[:, None, :]
                if y_mask.shape[:2] != (B, R) or y_mask.shape[-1] not in (1, m):
                    raise ValueError(f"y_mask: expected shape like y ({B}, {R}, {m}) or rows ({B}, {R}), "
                                     f"got {tuple(y_mask.shape)}")
                if y_mask.shape[-1] == m and bool((y_mask == y_mask[..., :1]).all()):
                    y_mask = y_mask[..., :1].contiguous()  # whole rows: the Gram forms apply
        elif y_mask is not None:
            raise ValueError("y_mask: given without a target y")
        return z, c, y, c_mask, y_mask

    # -- inference ---------------------------------------------------------------------------------
    def block(self, codes: list[torch.Tensor], l: int, z: torch.Tensor, c, y, c_mask, y_mask,
              contents: list[torch.Tensor] | None = None) -> _Block:
        """Layer ``l``'s LASSO with the other layers' codes fixed."""
        layer = self.layers[l]
        zt = (contents if contents is not None else self.contents(codes, z))[l]  # (B, R, n_l)
        w = zt @ layer.S  # (B, R, K)
        if l == len(self.layers) - 1 or y is None:  # (without a target the output library is unused)
            lib, target = layer.U, y
            if y is not None and layer.residual:
                target = y - zt
        else:
            # U~ = (layers above) U_l per sample: the layer's output vectors seen at the output
            cols = layer.U.T.expand(z.shape[0], *layer.U.T.shape)  # (B, K, m_l)
            lib = self._upper(codes, l, cols).transpose(1, 2)  # (B, m, K)
            target = y
            if y is not None and layer.residual:
                target = y - self._upper(codes, l, zt)  # the identity's share reaches the output through A
        c_target = None if c is None else c - (self.context_part(codes, skip=l) if len(self.layers) > 1 else 0)
        return _Block(w, lib, target, y_mask, layer.C, c_target, c_mask, self.alpha, self.beta)

    def solve_block(self, blk: _Block, lam: float, g0: torch.Tensor | None, max_iter: int | None = None,
                    path: str | None = None):
        """``(fista result, path used)`` for one block."""
        max_iter = max_iter or self.max_iter
        chosen = blk.choose_path(path or self.path, max_iter)
        op, _ = blk.hessian(chosen)
        lip = blk.lipschitz()
        if self.power_iterations:
            lip = torch.minimum(lip, POWER_SAFETY * _power_estimate(op, blk.w.shape[0], blk.w.shape[2], blk.w.dtype,
                                                                    self.power_iterations, blk.w.device))
        res = fista(op, blk.b(), lam, lip, g0=g0, max_iter=max_iter, tol=self.tol, nonneg=self.nonneg, fused=self.fused)
        return res, chosen

    @torch.no_grad()
    def infer(self, z: torch.Tensor, c: torch.Tensor | None = None, y: torch.Tensor | None = None,
              c_mask: torch.Tensor | None = None, y_mask: torch.Tensor | None = None, lam: float | None = None,
              max_iter: int | None = None, path: str | None = None) -> AppliedInference:
        """Infer every layer's code for a batch.

        Args:
            z: content ``(B, n)`` or ``(B, R, n)`` (rows sharing one code).
            c: optional context ``(B, p)``; c_mask: optional ``(B, p)`` 0/1.
            y: optional target ``(B, m)`` / ``(B, R, m)`` clamped with precision ``beta``;
               y_mask: optional 0/1 mask like ``y``, or ``(B, R)`` per row.
            lam: l1 weight for this call (default: the stack's; e.g. a test-time ``lam``).
            max_iter, path: override the FISTA budget and product form for this call.

        Schedule: one layer is one exact solve. A stack starts from its context-only codes
        (zero codes for residual layers without a context), then sweeps over the layers
        (bottom to top), each block solved exactly and warm-started, until no code changes by more
        than ``tol`` (relative) or ``max_sweeps`` is spent.
        """
        z, c, y, c_mask, y_mask = self._prepare(z, c, y, c_mask, y_mask)
        lam = self.lam if lam is None else float(lam)
        check_positive(lam, "lam", allow_zero=True)
        L, B = len(self.layers), z.shape[0]
        codes = [z.new_zeros(B, layer.num_atoms, dtype=self.dtype) for layer in self.layers]
        iterations, converged, paths = 0, True, [""] * L
        if L > 1:
            if c is None and not all(layer.residual for layer in self.layers):
                raise ValueError("c: a stack of non-residual layers starts from context-only codes; give a context "
                                 "(with all codes zero every layer's output design is zero)")
            if c is not None:  # initial pass: each layer from the context alone
                for l in range(L):
                    blk = self.block(codes, l, z, c, None, c_mask, None)
                    res, paths[l] = self.solve_block(blk, lam, None, max_iter, path)
                    codes[l], iterations = res.codes, iterations + res.iterations
        history = [float(self.energy_of(codes, z, c, y, c_mask, y_mask, lam).mean())] if L > 1 else []
        sweeps = 0
        for sweeps in range(1, (self.max_sweeps if L > 1 else 1) + 1):
            before = [g.clone() for g in codes]
            converged = True
            for l in range(L):
                blk = self.block(codes, l, z, c, y, c_mask, y_mask)
                res, paths[l] = self.solve_block(blk, lam, codes[l] if L > 1 else None, max_iter, path)
                codes[l], iterations, converged = res.codes, iterations + res.iterations, converged and res.converged
            if L == 1:
                break
            history.append(float(self.energy_of(codes, z, c, y, c_mask, y_mask, lam).mean()))
            change = max(float(((g - g0).norm(dim=-1) / g.norm(dim=-1).clamp_min(1e-12)).max())
                         for g, g0 in zip(codes, before))
            if change < self.tol:
                break
        else:
            converged = False
        return AppliedInference(
            codes=codes, z=z, c=c, y=y, c_mask=c_mask, y_mask=y_mask,
            energy=self.energy_of(codes, z, c, y, c_mask, y_mask, lam), iterations=iterations,
            sweeps=sweeps if L > 1 else 0, converged=converged, energy_history=history, paths=paths,
        )

    # -- energies ----------------------------------------------------------------------------------
    def energy_of(self, codes, z, c=None, y=None, c_mask=None, y_mask=None, lam: float | None = None) -> torch.Tensor:
        """Free energy ``F`` ``(B,)`` from the un-expanded formula (module docstring);
        differentiable in the atoms and in ``z`` (inputs already in ``(B, R, .)`` layout)."""
        lam = self.lam if lam is None else lam
        F = lam * sum(g.abs().sum(-1) for g in codes)
        if c is not None and self.alpha:
            e = c - self.context_part(codes)
            F = F + 0.5 * self.alpha * ((e if c_mask is None else e * c_mask) ** 2).sum(-1)
        if y is not None and self.beta:
            r = y - self.output(codes, z)
            F = F + 0.5 * self.beta * ((r if y_mask is None else r * y_mask) ** 2).sum((1, 2))
        return F

    def energy(self, inference: AppliedInference, lam: float | None = None) -> torch.Tensor:
        """``F`` ``(B,)`` of the current atoms at ``inference``'s codes; ``autograd`` of its batch
        mean is what Atomic-Hebb follows (Danskin)."""
        inf = inference
        return self.energy_of(inf.codes, inf.z, inf.c, inf.y, inf.c_mask, inf.y_mask, lam)

    @torch.no_grad()
    def optimality_residual(self, inference: AppliedInference, lam: float | None = None) -> list[torch.Tensor]:
        """Per layer, the KKT residual ``(B,)`` of its LASSO with the other layers fixed, from the
        un-expanded residuals (independent of the product form the solver used)."""
        inf = inference
        lam = self.lam if lam is None else lam
        out = []
        contents = self.contents(inf.codes, inf.z)
        for l in range(len(self.layers)):
            blk = self.block(inf.codes, l, inf.z, inf.c, inf.y, inf.c_mask, inf.y_mask, contents)
            out.append(kkt_violation(blk.smooth_gradient(inf.codes[l]), inf.codes[l], lam, self.nonneg))
        return out

    # -- learning ----------------------------------------------------------------------------------
    @torch.no_grad()
    def hebbian_updates(self, inference: AppliedInference) -> list[dict[str, torch.Tensor]]:
        """``-dF/d(U, S, C)`` per layer (batch mean), the Atomic-Hebb directions before learning
        rates (module docstring). Keys ``"U"``, ``"S"`` and, with a context, ``"C"``."""
        inf = inference
        B = inf.z.shape[0]
        contents = self.contents(inf.codes, inf.z)
        if inf.y is not None and self.beta:
            r = self.beta * (inf.y - contents[-1])
            if inf.y_mask is not None:
                r = r * inf.y_mask
        else:
            r = torch.zeros_like(contents[-1])
        e = None
        if inf.c is not None and self.alpha:
            e = self.alpha * (inf.c - self.context_part(inf.codes))
            if inf.c_mask is not None:
                e = e * inf.c_mask
        out: list[dict[str, torch.Tensor]] = [{} for _ in self.layers]
        for l in range(len(self.layers) - 1, -1, -1):
            layer, g, zt = self.layers[l], inf.codes[l], contents[l]
            gw = (zt @ layer.S) * g[:, None, :]  # (B, R, K)
            gu = (r @ layer.U) * g[:, None, :]  # (B, R, K)
            out[l]["U"] = torch.einsum("brm,brk->mk", r, gw) / B
            out[l]["S"] = torch.einsum("brn,brk->nk", zt, gu) / B
            if layer.C is not None:
                out[l]["C"] = (e.T @ g) / B if e is not None else torch.zeros_like(layer.C)
            r = layer.apply_transposed(g, r)  # residual seen below this layer
        return out

    @torch.no_grad()
    def atomic_hebb(self, inference: AppliedInference, rho_u: float, rho_s: float, rho_c: float = 0.0,
                    norm_policy: str = "unit", reseed_after: int = 0) -> list[dict[str, torch.Tensor]]:
        """Apply ``X += rho_X dX`` for the Atomic-Hebb directions, then the norm policy on the atoms
        that were active in the batch, then re-seed atoms unused for ``reseed_after`` batches
        (0 = never). Returns the raw directions (``hebbian_updates``).

        Norm policies: ``"unit"`` rescales every active atom's ``s_k`` and ``c_k`` (``u_k`` when
        there is no context) to norm 1, ``"clip"`` only shrinks them to norm 1, ``"none"``.
        Without a bound the l1 penalty is escaped by growing the atoms (``normalised_vectors``).
        """
        check_choice(norm_policy, NORM_POLICIES, "norm_policy")
        updates = self.hebbian_updates(inference)
        for layer, g, upd in zip(self.layers, inference.codes, updates):
            for name, rho in (("U", rho_u), ("S", rho_s), ("C", rho_c)):
                if rho and getattr(layer, name) is not None:  # a zero rate leaves the atoms bit for bit
                    step = rho * upd[name]
                    getattr(layer, name).add_(step * layer.context_rows[:, None] if name == "C" else step)
            active = (g != 0).any(dim=0)  # (K,)
            moved = rho_s or (rho_c if layer.C is not None else rho_u)  # did a bounded library change?
            if moved:
                apply_norm_policy(layer, active, norm_policy)
            layer.unused_batches = torch.where(active, 0, layer.unused_batches + 1)
            if reseed_after:
                dead = layer.unused_batches >= reseed_after
                if bool(dead.any()):
                    _reseed(layer, dead, inference, self, g)
        return updates


def normalised_vectors(layer: AppliedAtomLayer) -> tuple[torch.Tensor, torch.Tensor]:
    """The two code-vector libraries whose columns the norm policy bounds: ``(S, C)`` for a layer
    with a context, else ``(S, U)``.

    The rescaling ``(s, u, c, g) -> (a s, b u, a b c, g / (a b))`` leaves ``y_hat`` and ``C g``
    unchanged and shrinks ``||g||_1``, so two of the three scales must be fixed. With a context,
    ``u`` keeps the atom's output scale free while ``C g`` pins the code's scale; without one,
    ``u`` must be bounded too.
    """
    return (layer.S, layer.C) if layer.C is not None else (layer.S, layer.U)


def apply_norm_policy(layer: AppliedAtomLayer, active: torch.Tensor, policy: str) -> None:
    """Rescale the ``active`` ``(K,)`` atoms' columns of ``normalised_vectors(layer)`` (see
    ``atomic_hebb``); inactive columns are not rewritten, so they keep their exact bits."""
    if policy == "none" or not bool(active.any()):
        return
    idx = active.nonzero().squeeze(-1)
    for A in normalised_vectors(layer):
        norms = A[:, idx].norm(dim=0).clamp_min(1e-12)
        if policy == "clip":
            norms = norms.clamp_min(1.0)
        A[:, idx] = A[:, idx] / norms


def _reseed(layer: AppliedAtomLayer, dead: torch.Tensor, inf: AppliedInference, stack: AppliedAtomStack,
            g: torch.Tensor) -> None:
    """Point dead atoms at the worst-explained samples: ``s`` along the content, ``u`` along the
    output residual (first row of each sample), ``C`` along the context residual."""
    if inf.y is None:
        layer.unused_batches[dead] = 0
        return
    l = list(stack.layers).index(layer)
    contents = stack.contents(inf.codes, inf.z)
    resid = inf.y - contents[-1]  # (B, R, m)
    if inf.y_mask is not None:
        resid = resid * inf.y_mask
    worst = (resid**2).sum((1, 2)).argsort(descending=True)
    idx = dead.nonzero().squeeze(-1)[: len(worst)]
    pick = worst[: len(idx)]
    row = (resid[pick] ** 2).sum(-1).argmax(-1)  # (n_dead,) each sample's worst row
    zt = contents[l][pick, row]  # (n_dead, n)
    layer.S[:, idx] = (zt / zt.norm(dim=-1, keepdim=True).clamp_min(1e-12)).T
    if l == len(stack.layers) - 1:
        u = resid[pick, row]
        layer.U[:, idx] = (u / u.norm(dim=-1, keepdim=True).clamp_min(1e-12)).T
    if layer.C is not None and inf.c is not None:
        ec = inf.c[pick] - stack.context_part(inf.codes)[pick]
        layer.C[:, idx] = ec.T * layer.context_rows[:, None]
    layer.unused_batches[idx] = 0


# -- the slow reference ---------------------------------------------------------------------------
def design_matrix(stack: AppliedAtomStack, codes: list[torch.Tensor], l: int, i: int, z, c=None, y=None,
                  c_mask=None, y_mask=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample ``i``'s explicit least-squares problem for layer ``l``: ``(D, t)`` with
    ``F_smooth(g) = 1/2 ||t - D g||^2 + const``, built entry by entry from the effective weights.

    ``D`` stacks ``sqrt(alpha) m_c ⊙ C_l`` and, per row ``r``, ``sqrt(beta) m_r ⊙ (A U_l
    diag(S_l^T z~_r))`` where ``A`` is the explicit product of the layers above. Inputs as in
    ``infer`` (already in ``(B, R, .)`` layout).
    """
    layer = stack.layers[l]
    parts_D, parts_t = [], []
    if c is not None and stack.alpha:
        cm = torch.ones_like(c[i]) if c_mask is None else c_mask[i]
        other = sum((codes[j][i] @ stack.layers[j].C.T for j in range(len(stack.layers)) if j != l),
                    torch.zeros_like(c[i]))
        parts_D.append(stack.alpha**0.5 * cm[:, None] * layer.C)
        parts_t.append(stack.alpha**0.5 * cm * (c[i] - other))
    if y is not None and stack.beta:
        W = [lay.effective_weight(g[i : i + 1])[0] for lay, g in zip(stack.layers, codes)]
        below = torch.eye(z.shape[-1], dtype=z.dtype, device=z.device)
        for j in range(l):
            below = W[j] @ below
        above = torch.eye(layer.U.shape[0], dtype=z.dtype, device=z.device)
        for j in range(l + 1, len(stack.layers)):
            above = W[j] @ above
        for r in range(z.shape[1]):
            zt = below @ z[i, r]
            m = torch.ones_like(y[i, r]) if y_mask is None else y_mask[i, r].expand_as(y[i, r])
            D_r = above @ layer.U @ torch.diag(layer.S.T @ zt)  # (m, K)
            t_r = y[i, r] - (above @ zt if layer.residual else 0.0)
            parts_D.append(stack.beta**0.5 * m[:, None] * D_r)
            parts_t.append(stack.beta**0.5 * m * t_r)
    return torch.cat(parts_D), torch.cat(parts_t)


def reference_codes(stack: AppliedAtomStack, codes: list[torch.Tensor], l: int, z, c=None, y=None, c_mask=None,
                    y_mask=None, lam: float | None = None, n_iter: int = 20000, gram: bool = False) -> torch.Tensor:
    """Layer ``l``'s codes ``(B, K)`` with the other layers fixed, solved one sample at a time on
    the explicit design matrix: plain ISTA (``ista_reference``) or, with ``gram=True``, MFISTA on
    the per-sample Gram matrices (``fista_gram``). The slow, obviously correct reference."""
    lam = stack.lam if lam is None else lam
    out, Gs, bs = [], [], []
    for i in range(z.shape[0]):
        D, t = design_matrix(stack, codes, l, i, z, c, y, c_mask, y_mask)
        if gram:
            Gs.append(D.T @ D)
            bs.append(D.T @ t)
        else:
            out.append(ista_reference(D, t[None], lam, n_iter=n_iter, nonneg=stack.nonneg)[0])
    if gram:
        G = torch.stack(Gs)
        return fista_gram(G, torch.stack(bs), lam, max_iter=n_iter, tol=1e-12, nonneg=stack.nonneg).codes
    return torch.stack(out)


__all__ = ["AppliedAtomLayer", "AppliedAtomStack", "AppliedInference", "apply_norm_policy", "design_matrix",
           "normalised_vectors", "reference_codes"]
