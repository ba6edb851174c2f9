"""Vector Networks: layers of rank-1 weight atoms, FISTA inference, Atomic-Hebb learning.

Read top to bottom: ``VNConfig`` -> ``AtomLayer`` -> ``Inference`` -> ``VectorNetwork``
(``infer``, ``energy``, ``atomic_hebb``, ``fit``, ``predict``). The formulation is
``docs/vn.md`` sections 1-3; the choices it leaves open are made here and marked
**(choice)**.

Free energy (one sample; layers ``l = 1..L``, ``x_1`` the clamped input)::

    F = 1/2 ||m_x (x_1 - S_1 g_1)||^2
      + sum_{l<L} beta_l/2 ||S_{l+1} g_{l+1} - U_l g_l||^2     (interface of l and l+1)
      + beta_L/2 ||m_y (y - U_L g_L)||^2                       (only when y is clamped)
      + sum_l lam_l ||g_l||_1

**(choice)** The mismatch between layer ``l``'s message ``U_l g_l`` (= ``x_{l+1}``) and layer
``l+1``'s reconstruction ``S_{l+1} g_{l+1}`` (= ``h_{l,target}``) is one term of ``F``, counted
once with precision ``beta_l``. Each layer-local energy ``E_l`` is exactly the part of ``F``
that depends on ``g_l``::

    E_l = c_in/2 ||x_l - S_l g_l||^2 + c_out/2 ||h_l - U_l g_l||^2 + lam_l ||g_l||_1
    c_in = 1 (l = 1) or beta_{l-1},   c_out = beta_l

(for one layer this is literally the reference's energy). So up/down sweeps are exact block
coordinate descent on ``F`` (non-increasing), and Atomic-Hebb with precision-weighted residuals
``r^x = c_in (x_l - S_l g_l)``, ``r^h = c_out (h_l - U_l g_l)`` is exactly ``-rho dF/d(S, U)``
(Danskin), which the tests check against autograd.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import torch
from torch import nn

from .._model import DataSpec, Model
from .._split import Split
from .._validation import check_choice, check_int_fields, check_positive
from ..models import register
from ._fit import LocalFitConfig, fit_local
from .fista import LassoTerm, kkt_violation, masked_lasso

NORM_POLICIES = ("unit_s", "clip_s", "none")


@dataclass
class VNConfig(LocalFitConfig):
    """Configuration of a ``VectorNetwork`` (the shared fields: ``LocalFitConfig``).

    Attributes:
        atoms: atoms per layer ``(K_1, ..., K_L)``.
        hidden: interface sizes ``(m_1, ..., m_{L-1})`` of the layers below the top (the top
            layer's output size is the target size).
        lam: l1 weight, one value for all layers or one per layer.
        test_lam: l1 weight at prediction (and on the validation data of early stopping), one
            value or one per layer; ``None``: ``lam``.
        beta: top-down precision ``beta_l``, one value or one per layer (``beta_L`` weighs the
            clamped target).
        topk: hard limit on non-zeros of the top layer's code (0 = off).
        nonneg: restrict codes to ``g >= 0``.
        max_iter: FISTA iterations per layer per sweep.
        max_sweeps: up/down sweeps after the initial bottom-up pass (multi-layer only).
        tol: relative change of every code below which FISTA and the sweeps stop.
        rho_s, rho_u: Atomic-Hebb learning rates of ``S`` and ``U``.
        norm_policy: after an update, ``"unit_s"`` rescales each updated atom pair so
            ``||s|| = 1`` (``u`` by the same factor, keeping ``u g`` consistent), ``"clip_s"``
            does so only when ``||s|| > 1``, ``"none"`` leaves atoms alone. Without a bound the
            l1 penalty is escaped by growing atoms.
        reseed_after: an atom unused (zero code for the whole batch) for this many consecutive
            batches is re-seeded from the worst-explained sample's residual (0 = never).
        epochs, batch_size, val_fraction, patience: the training loop (``LocalFitConfig``;
            ``epochs`` is a cap when validating, the atoms of the best validation epoch are kept).
        output: ``"message"`` predicts ``U_L g_L``; ``"reconstruction"`` predicts ``S_1 g_1``
            (inpainting / reconstruction of the input; needs targets shaped like inputs).
        init: ``"data"`` initialises the first layer's atoms from random training pairs,
            ``"random"`` from Gaussian noise.
        progress, dtype: progress bar; ``"float32"`` or ``"float64"`` (``LocalFitConfig``).
        warm_start: start each training sample's solves from its codes of the previous epoch.
        retire_rows: each sample's FISTA solve stops at its own convergence and leaves the
            batch (``masked_lasso``'s ``retire_rows``) instead of running until the batch's
            slowest sample converges: each sample's code is then what a solve of it alone gives
            (up to floating-point rounding).
    """

    atoms: tuple[int, ...] = (64,)
    hidden: tuple[int, ...] = ()
    lam: float | tuple[float, ...] = 0.05
    test_lam: float | tuple[float, ...] | None = field(default=None, metadata={"neutral": None})
    beta: float | tuple[float, ...] = 1.0
    topk: int = 0
    nonneg: bool = False
    max_iter: int = 200
    max_sweeps: int = 10
    tol: float = 1e-4
    rho_s: float = 0.5
    rho_u: float = 0.5
    norm_policy: str = "unit_s"
    reseed_after: int = 50
    # neutral: the values that compute what fits did before these fields existed (no early stopping;
    # record keys omit a field at its neutral value). The default 0.1 is not neutral: it changes fits.
    val_fraction: float = field(default=0.1, metadata={"neutral": 0.0})
    patience: int = field(default=5, metadata={"neutral": 5})
    output: str = "message"
    init: str = "data"
    # start each training sample's bottom-up FISTA solves from its codes of the previous epoch (a
    # per-sample cache; the first epoch starts from zeros, as without it): fewer iterations while
    # the atoms move little, the same energies within the solver's tolerance
    warm_start: bool = field(default=False, metadata={"neutral": False})
    # neutral: off computes what fits did before the field existed (record keys omit it)
    retire_rows: bool = field(default=False, metadata={"neutral": False})

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("warm_start", "retire_rows"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: expected True or False, got {getattr(self, name)!r}")
        if not self.atoms or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in self.atoms):
            raise ValueError(f"atoms: expected a non-empty tuple of positive ints, got {self.atoms!r}")
        if len(self.hidden) != len(self.atoms) - 1 or any(not isinstance(m, int) or m < 1 for m in self.hidden):
            raise ValueError(
                f"hidden: expected {len(self.atoms) - 1} positive int(s) (one per layer below the top), got {self.hidden!r}"
            )
        for name in ("lam", "beta") + (() if self.test_lam is None else ("test_lam",)):
            vals = self.per_layer(name)
            for v in vals:
                check_positive(v, name, allow_zero=True)
        if isinstance(self.topk, bool) or not isinstance(self.topk, int) or self.topk < 0:
            raise ValueError(f"topk: expected an int >= 0, got {self.topk!r}")
        check_int_fields(self, ("max_iter", "max_sweeps"))
        if isinstance(self.reseed_after, bool) or not isinstance(self.reseed_after, int) or self.reseed_after < 0:
            raise ValueError(f"reseed_after: expected an int >= 0, got {self.reseed_after!r}")
        check_positive(self.tol, "tol")
        check_positive(self.rho_s, "rho_s", allow_zero=True)
        check_positive(self.rho_u, "rho_u", allow_zero=True)
        check_choice(self.norm_policy, NORM_POLICIES, "norm_policy")
        check_choice(self.output, ("message", "reconstruction"), "output")
        check_choice(self.init, ("data", "random"), "init")

    def lams_for(self, phase: str) -> tuple[float, ...]:
        """The l1 weight of ``phase`` (``"train"`` or ``"predict"``, ``LocalFitConfig.lam_for``),
        one value per layer."""
        return self._expand("lam" if phase == "train" or self.test_lam is None else "test_lam", self.lam_for(phase))

    def per_layer(self, name: str) -> tuple[float, ...]:
        """``lam``, ``test_lam`` or ``beta`` expanded to one value per layer (``test_lam``: the
        prediction weight, ``lams_for("predict")``)."""
        return self.lams_for("predict") if name == "test_lam" else self._expand(name, getattr(self, name))

    def _expand(self, name: str, v: float | tuple[float, ...]) -> tuple[float, ...]:
        if isinstance(v, (tuple, list)):
            if len(v) != len(self.atoms):
                raise ValueError(f"{name}: expected one value or {len(self.atoms)} (one per layer), got {v!r}")
            return tuple(float(a) for a in v)
        return (float(v),) * len(self.atoms)


class AtomLayer(nn.Module):
    """A library of ``K`` rank-1 atoms ``u_i s_i^T`` mapping ``R^n`` (input) to ``R^m`` (output).

    ``S`` ``(n, K)`` and ``U`` ``(m, K)`` are parameters learned by Atomic-Hebb, never by
    autograd (``requires_grad=False``).
    """

    def __init__(self, n: int, m: int, k: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.S = nn.Parameter(torch.randn(n, k, dtype=dtype) / n**0.5, requires_grad=False)  # (n, K)
        self.U = nn.Parameter(torch.randn(m, k, dtype=dtype) / m**0.5, requires_grad=False)  # (m, K)
        # batches since each atom last had a non-zero code (drives re-seeding)
        self.register_buffer("unused_batches", torch.zeros(k, dtype=torch.long))

    @property
    def num_atoms(self) -> int:
        return self.S.shape[1]

    def message(self, g: torch.Tensor) -> torch.Tensor:
        """Interface message ``U g``: ``(B, K) -> (B, m)``."""
        return g @ self.U.T

    def reconstruct(self, g: torch.Tensor) -> torch.Tensor:
        """Input reconstruction ``S g``: ``(B, K) -> (B, n)``."""
        return g @ self.S.T

    def effective_weight(self, g: torch.Tensor) -> torch.Tensor:
        """``W*(x) = U diag(g) S^T``: ``(K,) -> (m, n)`` or ``(B, K) -> (B, m, n)``.

        An inspection object: which atoms, how strongly. The layer never multiplies by it.
        """
        if g.ndim == 1:
            return (self.U * g) @ self.S.T
        return torch.einsum("mk,bk,nk->bmn", self.U, g, self.S)

    @torch.no_grad()
    def hebb_update(self, r_x: torch.Tensor, r_h: torch.Tensor | None, g: torch.Tensor, rho_s: float, rho_u: float,
                    norm_policy: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The Atomic-Hebb step on this layer's atoms, in place (``docs/vn.md`` section 3)::

            S += rho_s mean_b r_x g^T,     U += rho_u mean_b r_h g^T

        then the norm policy (``rescale_atoms``) on the atoms active in the batch and the
        unused-batch counter. The one copy of the rule: ``VectorNetwork.atomic_hebb`` and
        ``hebbnets.nn.VNLayer.hebb_step`` call it with their precision-weighted, masked residuals.

        Args:
            r_x: input residual ``(B, n)``; r_h: output residual ``(B, m)`` or ``None`` (``U``
                does not move); g: the codes ``(B, K)``.
        Returns:
            ``(dS (n, K), dU (m, K), active (K,))``: the raw updates before the norm policy and
            the atoms with a non-zero code in the batch. Column ``k`` of each update is scaled
            by ``g_k``, so an atom inactive for the whole batch keeps its exact bits.
        """
        B = g.shape[0]
        dS = rho_s * (r_x.T @ g) / B  # (n, K)
        dU = torch.zeros_like(self.U) if r_h is None else rho_u * (r_h.T @ g) / B  # (m, K)
        self.S += dS
        self.U += dU
        active = (g != 0).any(dim=0)  # (K,)
        rescale_atoms(self.S, self.U, active, norm_policy)
        self.unused_batches.copy_(torch.where(active, 0, self.unused_batches + 1))
        return dS, dU, active


@dataclass
class Inference:
    """Result of ``VectorNetwork.infer`` for a batch of ``B`` samples.

    Attributes:
        codes: per layer ``(B, K_l)``.
        inputs: per layer ``x_l`` ``(B, n_l)`` (``x_1`` clamped; ``x_{l+1} = U_l g_l``).
        targets: per layer ``h_l`` ``(B, m_l)`` (``S_{l+1} g_{l+1}``; the clamped ``y`` at the
            top, or ``None`` when nothing is clamped there).
        x_mask, y_mask: ``(B, n_1)`` / ``(B, m_L)`` masks used (``None`` = all observed).
        energies: per layer local energy ``E_l`` ``(B,)`` at the final codes.
        total_energy: free energy ``F`` ``(B,)`` at the final codes.
        sweeps: sweeps run after the initial pass (0 for one layer).
        iterations: FISTA iterations summed over layers and sweeps.
        converged: the sweeps met ``tol`` within ``max_sweeps`` and every FISTA solve of the last
            sweep (of the single solve, for one layer) met ``tol`` within ``max_iter``.
        energy_history: batch-mean ``F`` after the initial pass and after every sweep.
        lams: the l1 weight of every layer the codes were inferred with (``VNConfig.lams_for``
            of the inference's phase); ``energy`` and ``optimality_residual`` use them.
    """

    codes: list[torch.Tensor]
    inputs: list[torch.Tensor]
    targets: list[torch.Tensor | None]
    x_mask: torch.Tensor | None
    y_mask: torch.Tensor | None
    energies: list[torch.Tensor]
    total_energy: torch.Tensor
    sweeps: int
    iterations: int
    converged: bool
    energy_history: list[float] = field(default_factory=list)
    lams: tuple[float, ...] = ()


def rescale_atoms(S: torch.Tensor, U: torch.Tensor, active: torch.Tensor, policy: str) -> None:
    """In place: the atom-norm policy (``NORM_POLICIES``) on the ``active`` ``(K,)`` columns of
    ``S`` ``(n, K)`` and ``U`` ``(m, K)``: ``"unit_s"`` scales each active ``s`` to unit norm,
    ``"clip_s"`` only shrinks those above 1, ``"none"`` leaves them. ``s`` and ``u`` are divided by
    the same factor, so only the code's scale changes; inactive columns keep their exact bits.
    Applied by ``AtomLayer.hebb_update`` (the one copy of the Atomic-Hebb step)."""
    if policy == "none" or not bool(active.any()):
        return
    scale = S.norm(dim=0).clamp_min(1e-12)  # (K,)
    if policy == "clip_s":
        scale = scale.clamp_min(1.0)
    scale = torch.where(active, scale, torch.ones_like(scale))
    idx = active.nonzero().squeeze(-1)
    S[:, idx] = S[:, idx] / scale[idx]
    U[:, idx] = U[:, idx] / scale[idx]


def atoms_from_data(split: Split, atoms: int, seed: int, dtype: torch.dtype = torch.float32
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """``vn``'s ``init="data"``: ``atoms`` random training samples (drawn under ``seed``) as atom
    pairs, ``S`` ``(n, K)`` the flattened inputs (missing entries zeroed) scaled to unit norm and
    ``U`` ``(m, K)`` their flattened targets (missing entries zeroed) scaled by the same factors."""
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(split), (atoms,), generator=gen, device=gen.device).to(split.device)
    flat = lambda t: t.reshape(t.shape[0], -1).to(dtype)  # noqa: E731
    xs = flat(split.x[idx])  # (K, n)
    if split.x_mask is not None:
        xs = xs * flat(split.x_mask[idx])
    norms = xs.norm(dim=-1).clamp_min(1e-12)
    ys = flat(split.y[idx])  # (K, m)
    if split.y_mask is not None:
        ys = ys * flat(split.y_mask[idx])
    return (xs / norms[:, None]).T, (ys / norms[:, None]).T


@register("vn")
class VectorNetwork(Model):
    """A Vector Network (Pokel and Grewe, 2026), trained by inference + Atomic-Hebb only.

    Inputs and targets are flattened: layer 1 sees ``x`` ``(B, n_1)``, the top layer's message
    predicts ``y`` ``(B, m_L)``.

    ``product_form`` (an attribute, not a config field: every form solves the same problems)
    selects how each layer's Hessian is applied (``hebbnets.vn.fista.masked_lasso``); ``"auto"``
    picks the cheapest by shape. ``fused`` (an attribute for the same reason) selects FISTA's
    loop: ``"auto"`` the compiled fused loop where it applies and pays
    (``hebbnets.vn.fista.resolve_fused``), ``False`` the eager loop, ``True`` always fused.
    ``active_estimate`` (per layer, the most atoms a sample used in the last inference; ``None``
    before the first) lets ``"auto"`` pick the working-set solver for a solve from zeros (a
    prediction, a training batch's first pass) where the codes have been sparse: it changes which
    exact solver runs, never the problem (``hebbnets.vn.fista.choose_product_form``).
    """

    Config = VNConfig
    product_form = "auto"
    fused: bool | str = "auto"
    active_estimate: list[int] | None = None

    # -- construction --------------------------------------------------------------------------
    def _build(self, spec: DataSpec) -> None:
        cfg = self.config
        if spec.is_classification:
            raise ValueError("split: VectorNetwork predicts real-valued targets; got integer class labels")
        if cfg.output == "reconstruction" and spec.x_dim != spec.y_dim:
            raise ValueError("output: 'reconstruction' needs targets with as many entries as inputs")
        dtype = getattr(torch, cfg.dtype)
        sizes = [spec.x_dim, *cfg.hidden, spec.y_dim]
        self.layers = nn.ModuleList(
            AtomLayer(sizes[i], sizes[i + 1], k, dtype) for i, k in enumerate(cfg.atoms)
        )
        self._betas = cfg.per_layer("beta")
        # set once the data-dependent init has run, so a loaded model is not re-initialised
        self.register_buffer("initialised", torch.zeros((), dtype=torch.bool))

    @property
    def dtype(self) -> torch.dtype:
        return self.layers[0].S.dtype

    def precisions(self, l: int) -> tuple[float, float]:
        """``(c_in, c_out)``: the precisions of layer ``l``'s input and output terms (module
        docstring: ``c_in = 1`` at the bottom, else ``beta_{l-1}``; ``c_out = beta_l``)."""
        if isinstance(l, bool) or not isinstance(l, int) or not 0 <= l < len(self._betas):
            raise ValueError(f"l: expected a layer index in [0, {len(self._betas)}), got {l!r}")
        return (1.0 if l == 0 else self._betas[l - 1]), self._betas[l]

    # -- inference -------------------------------------------------------------------------------
    def _solve_layer(self, l, lam, x_l, h_l, x_mask, h_mask, g0, use_top_down) -> tuple[torch.Tensor, int, bool]:
        """Solve layer ``l``'s LASSO (l1 weight ``lam``) with its neighbours held fixed; returns (codes, iterations,
        converged). ``hebbnets.vn.fista.masked_lasso`` picks the product form by shape
        (``product_form``): a shared Gram matrix per mask pattern, one per sample, or, with
        per-sample masks and many atoms, the factors ``S^T (m ⊙ (S v))`` that never form one."""
        layer = self.layers[l]
        cfg = self.config
        c_in, c_out = self.precisions(l)
        terms = [LassoTerm(c_in, layer.S, x_l, x_mask)]
        if use_top_down and h_l is not None and c_out:
            terms.append(LassoTerm(c_out, layer.U, h_l, h_mask))
        top = l == len(self.layers) - 1
        active = self.active_estimate[l] if g0 is None and self.active_estimate is not None else None
        res = masked_lasso(terms, lam, g0=g0, max_iter=cfg.max_iter, tol=cfg.tol, nonneg=cfg.nonneg,
                           topk=cfg.topk if top else 0, form=self.product_form, fused=self.fused, active=active,
                           retire_rows=cfg.retire_rows)
        return res.codes, res.iterations, res.converged

    @torch.no_grad()
    def infer(
        self,
        x: torch.Tensor,
        y: torch.Tensor | None = None,
        x_mask: torch.Tensor | None = None,
        y_mask: torch.Tensor | None = None,
        init: list[torch.Tensor] | None = None,
        phase: str = "train",
    ) -> Inference:
        """Infer the sparse codes of every layer for a batch.

        Args:
            x: ``(B, n_1)`` clamped input (flattened).
            y: optional ``(B, m_L)`` target clamped at the top with precision ``beta_L``.
            x_mask: optional ``(B, n_1)`` 0/1 mask of observed input entries.
            y_mask: optional ``(B, m_L)`` 0/1 mask of observed target entries.
            init: optional per-layer warm starts ``(B, K_l)`` of the bottom-up pass's FISTA
                solves (e.g. an amortised encoder's codes, ``hebbnets.vn.amortised``); zeros
                when ``None``.
            phase: ``"train"`` infers with ``lam``, ``"predict"`` with ``test_lam``
                (``VNConfig.lams_for``; ``predict`` and the validation of ``fit`` use it).

        Schedule **(choice)**: a bottom-up pass (each layer solved from its input alone, the top
        layer with ``y`` if clamped), then alternating down and up sweeps of block coordinate
        descent on ``F``, warm-started, until the relative change of every code between sweeps
        is below ``tol`` or ``max_sweeps`` is spent.
        """
        cfg = self.config
        L = len(self.layers)
        lams = cfg.lams_for(phase)
        x = x.to(self.dtype)
        y = None if y is None else y.to(self.dtype)
        x_mask = None if x_mask is None else x_mask.to(self.dtype)
        y_mask = None if y_mask is None else y_mask.to(self.dtype)
        codes: list[torch.Tensor] = []
        iterations, converged = 0, True
        if init is not None:
            shapes = [(x.shape[0], layer.num_atoms) for layer in self.layers]
            if len(init) != L or any(tuple(g.shape) != s for g, s in zip(init, shapes)):
                raise ValueError(f"init: expected one code per layer shaped {shapes}, got "
                                 f"{[tuple(g.shape) for g in init]}")
            init = [g.to(self.dtype) for g in init]

        def context(l: int) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
            x_l = x if l == 0 else self.layers[l - 1].message(codes[l - 1])
            if l < L - 1:
                h_l, h_mask = self.layers[l + 1].reconstruct(codes[l + 1]), None
            else:
                h_l, h_mask = y, y_mask
            return x_l, h_l, (x_mask if l == 0 else None), h_mask

        # bottom-up pass: layers below the top have no top-down target yet
        for l in range(L):
            x_l = x if l == 0 else self.layers[l - 1].message(codes[l - 1])
            h_l, h_mask = (y, y_mask) if l == L - 1 else (None, None)
            g0 = None if init is None else init[l]
            g, it, ok = self._solve_layer(l, lams[l], x_l, h_l, x_mask if l == 0 else None, h_mask, g0, True)
            codes.append(g)
            iterations += it
            converged &= ok
        history = [float(self.free_energy(x, y, x_mask, y_mask, codes, lams).mean())]

        sweeps = 0
        if L > 1:
            order = list(range(L - 2, -1, -1)) + list(range(1, L))  # down then up
            sweeps_converged = False
            for sweeps in range(1, cfg.max_sweeps + 1):
                before = [g.clone() for g in codes]
                converged = True  # judged on the last sweep: early warm starts may use their budget
                for l in order:
                    x_l, h_l, xm, hm = context(l)
                    codes[l], it, ok = self._solve_layer(l, lams[l], x_l, h_l, xm, hm, codes[l], True)
                    iterations += it
                    converged &= ok
                history.append(float(self.free_energy(x, y, x_mask, y_mask, codes, lams).mean()))
                change = max(
                    float(((g - g0).norm(dim=-1) / g.norm(dim=-1).clamp_min(1e-12)).max())
                    for g, g0 in zip(codes, before)
                )
                if change < cfg.tol:
                    sweeps_converged = True
                    break
            converged &= sweeps_converged

        inputs = [x] + [self.layers[l].message(codes[l]) for l in range(L - 1)]
        targets: list[torch.Tensor | None] = [self.layers[l + 1].reconstruct(codes[l + 1]) for l in range(L - 1)]
        targets.append(y)
        energies = [
            self._local_energy(l, lams[l], inputs[l], targets[l], x_mask if l == 0 else None,
                               y_mask if l == L - 1 else None, codes[l])
            for l in range(L)
        ]
        self.active_estimate = [int((g != 0).sum(1).max()) for g in codes]
        return Inference(
            codes=codes, inputs=inputs, targets=targets, x_mask=x_mask, y_mask=y_mask,
            energies=energies, total_energy=self.free_energy(x, y, x_mask, y_mask, codes, lams),
            sweeps=sweeps, iterations=iterations, converged=converged, energy_history=history, lams=lams,
        )

    # -- energies ----------------------------------------------------------------------------------
    def _local_energy(self, l, lam, x_l, h_l, x_mask, h_mask, g) -> torch.Tensor:
        """``E_l`` ``(B,)`` (module docstring), from the un-expanded formula."""
        layer = self.layers[l]
        c_in, c_out = self.precisions(l)
        rx = x_l - layer.reconstruct(g)
        if x_mask is not None:
            rx = rx * x_mask
        e = 0.5 * c_in * (rx**2).sum(-1) + lam * g.abs().sum(-1)
        if h_l is not None:
            rh = h_l - layer.message(g)
            if h_mask is not None:
                rh = rh * h_mask
            e = e + 0.5 * c_out * (rh**2).sum(-1)
        return e

    def free_energy(self, x: torch.Tensor, y: torch.Tensor | None, x_mask: torch.Tensor | None,
                    y_mask: torch.Tensor | None, codes: list[torch.Tensor], lams: tuple[float, ...]) -> torch.Tensor:
        """Free energy ``F`` ``(B,)`` with every term counted once (module docstring), for
        flattened inputs ``x`` ``(B, n_1)`` (``y`` ``(B, m_L)`` or ``None``; masks alike), codes
        ``(B, K_l)`` per layer and the l1 weights ``lams`` (``VNConfig.lams_for``)."""
        L = len(self.layers)
        first = self.layers[0]
        rx = x - first.reconstruct(codes[0])
        if x_mask is not None:
            rx = rx * x_mask
        F = 0.5 * (rx**2).sum(-1)
        for l in range(L):
            F = F + lams[l] * codes[l].abs().sum(-1)
            if l < L - 1:
                gap = self.layers[l + 1].reconstruct(codes[l + 1]) - self.layers[l].message(codes[l])
                F = F + 0.5 * self._betas[l] * (gap**2).sum(-1)
        if y is not None:
            ry = y - self.layers[-1].message(codes[-1])
            if y_mask is not None:
                ry = ry * y_mask
            F = F + 0.5 * self._betas[-1] * (ry**2).sum(-1)
        return F

    @torch.no_grad()
    def optimality_residual(self, inference: Inference) -> list[torch.Tensor]:
        """Per layer, the KKT residual ``(B,)`` of its LASSO with its neighbours held fixed.

        The gradient of ``E_l`` in ``g_l`` is computed from the un-expanded formula
        (``-c_in S^T (m_x (x_l - S g)) - c_out U^T (m_h (h_l - U g))``), independently of the
        Gram-matrix path inference took, and passed to ``fista.kkt_violation``. All layers near
        zero means a fixed point of the up/down sweeps (a block-coordinate minimum of ``F``).
        With ``topk`` the top layer's problem is not a LASSO and its residual is no certificate.
        """
        inf = inference
        L = len(self.layers)
        out = []
        for l, layer in enumerate(self.layers):
            g = inf.codes[l]
            c_in, c_out = self.precisions(l)
            rx = inf.inputs[l] - layer.reconstruct(g)  # (B, n)
            if l == 0 and inf.x_mask is not None:
                rx = rx * inf.x_mask
            d = -c_in * (rx @ layer.S)  # (B, K)
            h = inf.targets[l]
            if h is not None:
                rh = h - layer.message(g)
                if l == L - 1 and inf.y_mask is not None:
                    rh = rh * inf.y_mask
                d = d - c_out * (rh @ layer.U)
            out.append(kkt_violation(d, g, inf.lams[l], self.config.nonneg))
        return out

    def energy(self, inference: Inference) -> torch.Tensor:
        """Free energy ``F`` ``(B,)`` of the current atoms at ``inference``'s codes (and its l1
        weights).

        Differentiable in the atoms (the codes are held fixed): ``autograd`` of its batch
        mean is what Atomic-Hebb follows (Danskin).
        """
        inf = inference
        y = inf.targets[-1]
        return self.free_energy(inf.inputs[0], y, inf.x_mask, inf.y_mask, inf.codes, inf.lams)

    # -- slow learning -------------------------------------------------------------------------------
    @torch.no_grad()
    def atomic_hebb(self, inference: Inference) -> list[dict[str, torch.Tensor]]:
        """Atomic-Hebb: ``S_l += rho_S r^x_l g_l^T``, ``U_l += rho_U r^h_l g_l^T`` (batch mean),
        then the atom-norm policy on the updated atoms, then re-seeding of long-unused atoms.

        Residuals are precision-weighted and masked (module docstring). An atom whose code is
        zero for the whole batch gets an exactly zero update and is not touched by the norm
        policy, so it stays bit-for-bit unchanged (unless re-seeded).

        Returns:
            per layer ``{"S": dS, "U": dU}``: the raw updates before the norm policy.
        """
        cfg = self.config
        inf = inference
        L = len(self.layers)
        updates = []
        for l, layer in enumerate(self.layers):
            g = inf.codes[l]  # (B, K)
            B = g.shape[0]
            c_in, c_out = self.precisions(l)
            r_x = c_in * (inf.inputs[l] - layer.reconstruct(g))  # (B, n)
            if l == 0 and inf.x_mask is not None:
                r_x = r_x * inf.x_mask
            h = inf.targets[l]
            if h is None:
                r_h = torch.zeros(B, layer.U.shape[0], dtype=g.dtype, device=g.device)
            else:
                r_h = c_out * (h - layer.message(g))  # (B, m)
                if l == L - 1 and inf.y_mask is not None:
                    r_h = r_h * inf.y_mask
            dS, dU, _ = layer.hebb_update(r_x, r_h, g, cfg.rho_s, cfg.rho_u, cfg.norm_policy)
            if cfg.reseed_after:
                self._reseed(layer, r_x, r_h, layer.unused_batches >= cfg.reseed_after)
            updates.append({"S": dS, "U": dU})
        return updates

    def _reseed(self, layer: AtomLayer, r_x: torch.Tensor, r_h: torch.Tensor, dead: torch.Tensor) -> None:
        """Point dead atoms at the largest residuals of the batch (one sample per atom)."""
        n_dead = int(dead.sum())
        if n_dead == 0:
            return
        worst = (r_x**2).sum(-1).argsort(descending=True)[:n_dead]  # (n_dead,)
        dead_idx = dead.nonzero().squeeze(-1)[: len(worst)]
        scale = r_x[worst].norm(dim=-1).clamp_min(1e-12)  # (n_dead,)
        layer.S[:, dead_idx] = (r_x[worst] / scale[:, None]).T
        layer.U[:, dead_idx] = (r_h[worst] / scale[:, None]).T
        layer.unused_batches[dead_idx] = 0

    def iter_inference(self, split: Split, clamp_targets: bool = False, chunk: int = 1024,
                       phase: str = "train") -> Iterator[tuple[int, Inference]]:
        """Infer the codes of ``split`` ``chunk`` samples at a time; yields ``(samples, Inference)``.

        As at prediction (input and its mask only) or, with ``clamp_targets``, as in training
        (the target clamped at the top); ``phase`` picks the l1 weights (``infer``). Chunks bound the memory of the batched solver; the
        measures over a whole split (``hebbnets.entanglement``, the amortised encoder's
        training data) read them in order.
        """
        self.require_built()
        if not isinstance(split, Split) or len(split) == 0:
            raise ValueError("split: expected a non-empty hebbnets.Split")
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
            raise ValueError(f"chunk: expected an int >= 1, got {chunk!r}")
        x, xm = self.flatten(split.x), self.flatten(split.x_mask)
        y, ym = self.flatten(split.y), self.flatten(split.y_mask)
        for start in range(0, len(split), chunk):
            part = slice(start, start + chunk)
            pick = lambda t: None if t is None else t[part]  # noqa: E731
            inf = self.infer(x[part], y[part] if clamp_targets else None, pick(xm), pick(ym) if clamp_targets else None,
                             phase=phase)
            yield x[part].shape[0], inf

    # -- Model API ---------------------------------------------------------------------------------
    def flatten(self, t: torch.Tensor | None) -> torch.Tensor | None:
        """``(N, *shape) -> (N, prod(shape))`` in the model's dtype (``None`` stays ``None``):
        the layout ``infer`` takes."""
        return None if t is None else t.reshape(t.shape[0], -1).to(self.dtype)

    def _init_from_data(self, split: Split) -> None:
        """**(choice)** First-layer atoms start as normalised random training inputs, paired with
        their targets (``u`` scaled like ``s``): a data-driven start speeds up dictionary learning."""
        first = self.layers[0]
        S, U = atoms_from_data(split, first.num_atoms, self.seed, self.dtype)
        first.S.copy_(S)
        if len(self.layers) == 1:
            first.U.copy_(U)

    def _fit(self, split: Split) -> None:
        def init(train: Split) -> None:  # on the training part only: validation stays unseen
            if not bool(self.initialised):
                if self.config.init == "data":
                    self._init_from_data(train)
                self.initialised.fill_(True)

        x, y = self.flatten(split.x), self.flatten(split.y)
        xm, ym = self.flatten(split.x_mask), self.flatten(split.y_mask)

        # warm_start: per training sample and layer its last codes, (N, K_l) (zeros: a cold start)
        cache = ([x.new_zeros(len(split), layer.num_atoms) for layer in self.layers]
                 if self.config.warm_start else None)
        self.fit_iterations = 0  # FISTA iterations of the fit's training inferences (what warm starts save)

        def learn_batch(i: torch.Tensor) -> float:
            start = None if cache is None else [c[i] for c in cache]
            inf = self.infer(x[i], y[i], None if xm is None else xm[i], None if ym is None else ym[i], init=start)
            if cache is not None:
                for c, g in zip(cache, inf.codes):
                    c[i] = g
            self.fit_iterations += inf.iterations
            self.atomic_hebb(inf)
            return float(inf.total_energy.sum())

        self.history: list[float] = fit_local(self, split, learn_batch, desc="vn fit", on_start=init)["energy"]

    def _predict(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> torch.Tensor:
        spec = self.spec
        outs = []
        xf, mf = self.flatten(x), self.flatten(x_mask)
        for start in range(0, xf.shape[0], 1024):
            inf = self.infer(xf[start : start + 1024], x_mask=None if mf is None else mf[start : start + 1024],
                             phase="predict")
            if self.config.output == "reconstruction":
                outs.append(self.layers[0].reconstruct(inf.codes[0]))
            else:
                outs.append(self.layers[-1].message(inf.codes[-1]))
        return torch.cat(outs).reshape(x.shape[0], *spec.y_shape).to(x.dtype)  # the caller's dtype

    @torch.no_grad()
    def active_count(self, x: torch.Tensor, x_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Code size: non-zero first-layer code entries per sample at prediction (``test_lam``),
        ``(N,)`` long, for inputs ``x`` ``(N, *x_shape)``."""
        self.require_built()
        xf, mf = self.flatten(x), self.flatten(x_mask)
        out = []
        for start in range(0, xf.shape[0], 1024):
            inf = self.infer(xf[start : start + 1024], x_mask=None if mf is None else mf[start : start + 1024],
                             phase="predict")
            out.append((inf.codes[0] != 0).sum(-1))
        return torch.cat(out)
