"""``nbody``: predict the next state of a 2D N-body system under unknown force laws.

Each sample is one system of ``N`` bodies simulated by ``_nbody_sim`` (RK4) under a set of
active force laws (gravity, drag, Lorentz, springs). Each active law's strength is its nominal
value (a task parameter) times a per-system factor drawn uniformly from ``[1 - strength_spread,
1 + strength_spread]``, so the strengths have to be read off the window, not memorised per law.
The model sees a window of ``window`` past states and predicts the change to the next one;
which laws act, and how strongly, is never given.

Shapes (``W = window``, ``M = n_max`` bodies after padding):

* ``x`` ``(M, W, 6)``: per body and time step ``(x, y, vx, vy, mass, charge)``; bodies come first
  so sequence models see one token per body. Padded bodies are zero and ``x_mask`` (same shape)
  is 0 for them, 1 for real bodies.
* ``y`` ``(M, 4)``: ``(state[t+1] - state[t]) / target_scale`` for ``target="delta"`` (the
  default; ``target_scale`` per feature, from the training split, stored in ``info``), or the raw
  next state ``(x, y, vx, vy)`` for ``target="state"``. ``y_mask`` is 0 on padded bodies.

Splits (every law and every body count of an OOD split occurs in training; only the combination
is new):

* ``train`` / ``id``: one law at a time; ``N`` in ``[n_min, n_max]`` for every law, and also
  ``N = n_fewer`` for the single-body laws in ``fewer_laws`` (default drag and Lorentz);
* ``ood_forces``: two to four laws together, ``N`` in ``[n_min, n_max]``;
* ``ood_fewer``: one of the laws *not* in ``fewer_laws`` (default gravity, springs: the pairwise
  laws) with ``N = n_fewer`` bodies, a count trained only with the other laws;
* ``ood_both``: two to four laws with ``N = n_fewer``.

Why these defaults (``dt = 0.3``, ``window = 3``, strengths varying per system): with a short
observation interval the next change is almost the extrapolation of the last ones, so a global
linear map from a body's own window changes (``window_linear``) matched or beat the learned
models on every split, and the split measured extrapolation rather than composition. At
``dt = 0.3`` both trivial baselines (``window_linear``, ``system_ridge``) fall well behind the
interaction network (``gnn``) on the next step and on the rollout. RK4 with 10 substeps
keeps the integration error of a target below 2e-3 (in target units) against 40 substeps.

Metrics: ``task.metric = "mse"`` on ``y`` (padded bodies excluded), the headline: every model
is tuned on it, and it separates the learned models from the trivial baselines most clearly
(``reports/vn_dynamics.md`` computes both metrics' margins from the records); ``next_step_nmse``
divides it by the MSE of the "nothing changes" predictor on the same split (normalised per
split); ``rollout_mse`` feeds predictions back for ``rollout_steps`` steps (default 5, 1.5 time
units: over 10 steps at ``dt = 0.3`` the chaotic systems separate and every model's rollout
error, and the trivial ones', approach the same value) and reports the state MSE, which adds
how stably a model's errors compound to how well it composes the laws.
"""
from __future__ import annotations

import itertools
from typing import Any

import torch

from .._split import Split
from .._validation import check_choice
from ._nbody_sim import LAWS, Forces, simulate
from . import _configs
from ._task import Task, check_params, register_task

_COMMON = dict(window=3, n_min=3, n_max=5, n_fewer=2, dt=0.3, substeps=10, rollout_steps=5,
               gravity=0.5, drag=2.0, lorentz=1.5, spring=0.5, softening=0.3, rest_length=1.0,
               pos_std=1.0, vel_std=0.5, mass_low=0.5, mass_high=1.5, charge_low=0.5, charge_high=1.5,
               strength_spread=0.5, fewer_laws=("drag", "lorentz"), target="delta")
#: the task's parameters per scale (a caller's overrides go over these)
DEFAULTS = {
    "quick": dict(n_train=4000, n_test=500, **_COMMON),
    "paper": dict(n_train=20000, n_test=2000, **_COMMON),
}
FEATURES = ("x", "y", "vx", "vy", "mass", "charge")

# The configuration of each model chosen on validation data carved from the training split (single
# laws, N in the training range), with every validation point: hebbnets/tasks/configs/nbody.json.

def _law_sets(min_size: int, max_size: int) -> list[tuple[str, ...]]:
    return [c for k in range(min_size, max_size + 1) for c in itertools.combinations(LAWS, k)]


def _generate(n: int, law_sets: list[tuple[str, ...]], n_choices: dict[tuple[str, ...], tuple[int, ...]],
              p: dict[str, Any], gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Simulate ``n`` systems; returns raw padded trajectories and their factors.

    ``law_sets`` lists the allowed sets of active laws; ``n_choices[laws]`` the body counts allowed
    with that set (drawn uniformly). Each active law's strength is its nominal value times a
    per-system factor uniform in ``[1 - strength_spread, 1 + strength_spread]``.
    """
    m_max, w, h = int(p["n_max"]), int(p["window"]), int(p["rollout_steps"])
    which = torch.randint(len(law_sets), (n,), generator=gen)  # (n,)
    active = torch.tensor([[law in law_sets[i] for law in LAWS] for i in which.tolist()])  # (n, 4) bool
    pick = torch.rand(n, generator=gen)
    n_bodies = torch.tensor([n_choices[law_sets[i]][int(u * len(n_choices[law_sets[i]]))]
                             for i, u in zip(which.tolist(), pick.tolist())])  # (n,)
    mask = (torch.arange(m_max)[None, :] < n_bodies[:, None]).double()  # (n, M)
    dd = torch.float64
    r0 = p["pos_std"] * torch.randn(n, m_max, 2, generator=gen, dtype=dd) * mask[..., None]
    v0 = p["vel_std"] * torch.randn(n, m_max, 2, generator=gen, dtype=dd) * mask[..., None]
    mass = (p["mass_low"] + (p["mass_high"] - p["mass_low"]) * torch.rand(n, m_max, generator=gen, dtype=dd)) * mask
    sign = torch.where(torch.rand(n, m_max, generator=gen) < 0.5, -1.0, 1.0).double()
    charge = sign * (p["charge_low"] + (p["charge_high"] - p["charge_low"]) * torch.rand(n, m_max, generator=gen, dtype=dd)) * mask
    nominal = torch.tensor([float(p[law]) for law in LAWS], dtype=dd)  # (4,)
    spread = float(p["strength_spread"])
    factor = 1.0 + spread * (2.0 * torch.rand(n, len(LAWS), generator=gen, dtype=dd) - 1.0)  # (n, 4)
    s = active.double() * nominal * factor  # (n, 4) zero for inactive laws
    forces = Forces(s[:, 0], s[:, 1], s[:, 2], s[:, 3],
                    torch.full((n,), float(p["softening"]), dtype=dd), torch.full((n,), float(p["rest_length"]), dtype=dd))
    traj = simulate(r0, v0, mass, charge, forces, n_steps=w - 1 + h, dt=float(p["dt"]),
                    substeps=int(p["substeps"]), mask=mask)  # (n, W+H, M, 4)
    return dict(traj=traj, mass=mass, charge=charge, mask=mask, active=active, n_bodies=n_bodies, strengths=s)


def _window_inputs(states: torch.Tensor, mass: torch.Tensor, charge: torch.Tensor, mask: torch.Tensor):
    """``states`` ``(n, W, M, 4)`` -> inputs ``(n, M, W, 6)`` and their mask (float32)."""
    n, w, m_max, _ = states.shape
    states = states.transpose(1, 2)  # (n, M, W, 4)
    static = torch.stack([mass, charge], -1)[:, :, None].expand(n, m_max, w, 2)  # (n, M, W, 2)
    x = torch.cat([states, static], -1) * mask[:, :, None, None]
    x_mask = mask[:, :, None, None].expand(n, m_max, w, 6)
    return x.float(), x_mask.float().contiguous()


def _to_split(data: dict[str, torch.Tensor], p: dict[str, Any], scale: torch.Tensor) -> tuple[Split, torch.Tensor]:
    w = int(p["window"])
    traj, mask = data["traj"], data["mask"]
    x, x_mask = _window_inputs(traj[:, :w], data["mass"], data["charge"], mask)
    nxt, last = traj[:, w], traj[:, w - 1]  # (n, M, 4)
    y = (nxt - last) / scale if p["target"] == "delta" else nxt
    y = y * mask[..., None]
    y_mask = mask[..., None].expand_as(y)
    return Split(x, y.float(), x_mask=x_mask, y_mask=y_mask.float().contiguous()), traj[:, w:].float()


def check_simulation_params(p: dict[str, Any], extra_ints: tuple[str, ...] = ()) -> None:
    """Validate the simulation parameters every nbody-based task shares (``target``, the sizes,
    ``window``, ``n_min <= n_max``, ``strength_spread``, the law strengths), plus ``extra_ints``
    (ints >= 1); one ``ValueError`` naming the parameter."""
    check_choice(p["target"], ("delta", "state"), "target")
    for key in ("n_train", "n_test", "window", "n_min", "n_max", "substeps", "rollout_steps", *extra_ints):
        if isinstance(p[key], bool) or not isinstance(p[key], int) or p[key] < 1:
            raise ValueError(f"{key}: expected an int >= 1, got {p[key]!r}")
    if p["window"] < 2:
        raise ValueError(f"window: need at least 2 past states, got {p['window']}")
    if p["n_min"] > p["n_max"]:
        raise ValueError(f"n_min: need n_min <= n_max, got {p['n_min']}, {p['n_max']}")
    if not isinstance(p["strength_spread"], (int, float)) or isinstance(p["strength_spread"], bool) or not 0 <= p["strength_spread"] < 1:
        raise ValueError(f"strength_spread: expected a number in [0, 1), got {p['strength_spread']!r}")
    for law in LAWS:
        if not isinstance(p[law], (int, float)) or isinstance(p[law], bool) or p[law] == 0:
            raise ValueError(f"{law}: the strength of every law must be a non-zero number, got {p[law]!r}")


@register_task("nbody")
def make_nbody(seed: int = 0, scale: str = "quick", **params: Any) -> Task:
    """Build the task. Parameters (defaults depend on ``scale``): ``n_train``, ``n_test``,
    ``window``, ``n_min``, ``n_max``, ``n_fewer``, ``dt``, ``substeps``, ``rollout_steps``, the law
    strengths ``gravity``, ``drag``, ``lorentz``, ``spring`` (nominal), ``strength_spread`` (per-system
    factor range, in ``[0, 1)``), ``fewer_laws`` (laws also trained with ``n_fewer`` bodies),
    ``softening``, ``rest_length``, the
    initial-condition scales ``pos_std``, ``vel_std``, ``mass_low/high``, ``charge_low/high``
    and ``target`` (``"delta"`` or ``"state"``)."""
    p = check_params(params, DEFAULTS[scale], "nbody")
    check_simulation_params(p, ("n_fewer",))
    if not p["n_fewer"] < p["n_min"] <= p["n_max"]:
        raise ValueError(f"n_fewer: need n_fewer < n_min <= n_max, got {p['n_fewer']}, {p['n_min']}, {p['n_max']}")
    fl = p["fewer_laws"]
    if (not isinstance(fl, (list, tuple)) or any(law not in LAWS for law in fl) or len(set(fl)) != len(fl)
            or not 0 < len(fl) < len(LAWS)):
        raise ValueError(f"fewer_laws: expected distinct laws from {list(LAWS)}, at least one and not all, got {fl!r}")
    gen = torch.Generator().manual_seed(seed)
    single, multi = _law_sets(1, 1), _law_sets(2, len(LAWS))
    many = tuple(range(int(p["n_min"]), int(p["n_max"]) + 1))
    fewer = (int(p["n_fewer"]),)
    fewer_laws = tuple(p["fewer_laws"])
    # training: every single law with N in [n_min, n_max]; the laws in fewer_laws also with N = n_fewer
    train_n = {c: (fewer + many if c[0] in fewer_laws else many) for c in single}
    fewer_held = [c for c in single if c[0] not in fewer_laws]  # single laws never trained at n_fewer
    raw = {
        "train": _generate(int(p["n_train"]), single, train_n, p, gen),
        "id": _generate(int(p["n_test"]), single, train_n, p, gen),
        "ood_forces": _generate(int(p["n_test"]), multi, {c: many for c in multi}, p, gen),
        "ood_fewer": _generate(int(p["n_test"]), fewer_held, {c: fewer for c in fewer_held}, p, gen),
        "ood_both": _generate(int(p["n_test"]), multi, {c: fewer for c in multi}, p, gen),
    }
    target_scale = delta_scale(raw["train"], p)  # from the training split only
    splits, future = {}, {}
    for key, data in raw.items():
        splits[key], future[key] = _to_split(data, p, target_scale)
    return Task(
        name="nbody",
        train=splits.pop("train"),
        tests=splits,
        metric="mse",
        params={"seed": seed, "scale": scale, **p},
        model_configs=_configs.chosen("nbody"),
        info={
            "features": FEATURES,
            "laws": LAWS,
            "target_scale": target_scale.float(),
            "future": future,  # {split: (n, rollout_steps, M, 4)} true states after the window
            "active_laws": {k: d["active"] for k, d in raw.items()},  # {split: (n, 4) bool}
            "n_bodies": {k: d["n_bodies"] for k, d in raw.items()},  # {split: (n,)}
            "strengths": {k: d["strengths"].float() for k, d in raw.items()},  # {split: (n, 4)} 0 = law off
        },
        # the runner records both next to the task metric on every split
        extra_metrics={"next_step_nmse": next_step_nmse, "rollout_mse": _rollout_mse_full},
    )


def delta_scale(train: dict[str, torch.Tensor], p: dict[str, Any]) -> torch.Tensor:
    """``(4,)`` target units: one std for the position deltas of the simulated systems ``train``
    (``_generate``'s output), one for the velocity deltas; ones for ``target="state"``."""
    if p["target"] == "state":
        return torch.ones(4, dtype=torch.float64)
    w = int(p["window"])
    delta = (train["traj"][:, w] - train["traj"][:, w - 1])[train["mask"] > 0]  # (bodies, 4)
    pos_s, vel_s = float(delta[:, :2].std()), float(delta[:, 2:].std())
    return torch.tensor([pos_s, pos_s, vel_s, vel_s], dtype=torch.float64)


def simulate_split(n: int, law_sets: list[tuple[str, ...]], n_bodies: tuple[int, ...], p: dict[str, Any],
                   gen: torch.Generator, target_scale: torch.Tensor | None = None
                   ) -> tuple[Split, dict[str, torch.Tensor], torch.Tensor]:
    """``n`` systems under ``law_sets`` (each drawn uniformly) with a body count drawn from
    ``n_bodies``, as a split of this task's shapes: ``(split, raw systems, target_scale)``;
    ``target_scale`` defaults to ``delta_scale`` of these systems. For tasks built on the same
    simulator (``hebbnets.tasks.continual``'s ``nbody_continual``)."""
    sets = [tuple(s) for s in law_sets]
    data = _generate(n, sets, {s: tuple(n_bodies) for s in sets}, p, gen)
    scale = delta_scale(data, p) if target_scale is None else target_scale
    return _to_split(data, p, scale)[0], data, scale


def _get_split(task: Task, split_name: str) -> Split:
    if not isinstance(task, Task) or task.name != "nbody":
        raise ValueError("task: expected a Task made by hebbnets.tasks.make('nbody', ...)")
    if split_name == "train":
        return task.train
    check_choice(split_name, ["train", *task.tests], "split_name")
    return task.tests[split_name]


def _to_delta(pred: torch.Tensor, last: torch.Tensor, task: Task) -> torch.Tensor:
    """Model output -> state change in physical units."""
    if task.params["target"] == "delta":
        return pred * task.info["target_scale"]
    return pred - last


def next_step_nmse(model: Any, task: Task, split_name: str) -> float:
    """Next-step MSE divided by the MSE of predicting "no change" on the same split.

    0 is perfect, 1 is no better than copying the last state. Padded bodies are excluded.
    """
    split = _get_split(task, split_name)
    pred = model.predict(split.x, split.x_mask)  # (n, M, 4)
    last = split.x[:, :, -1, :4]  # (n, M, 4)
    scale = task.info["target_scale"] if task.params["target"] == "delta" else torch.ones(4)
    true_delta = _to_delta(split.y, last, task) / scale  # (n, M, 4) in target units
    err = ((_to_delta(pred, last, task) / scale - true_delta) ** 2 * split.y_mask).sum()
    ref = (true_delta**2 * split.y_mask).sum()
    return float(err / ref.clamp_min(1e-30))


def rollout_states(model: Any, task: Task, split_name: str, steps: int = 10) -> torch.Tensor:
    """Autoregressive rollout: ``(n, steps, M, 4)`` predicted states after the window.

    Each predicted state (plus the known masses and charges) is appended to the window and the
    oldest state dropped; padded bodies stay zero.
    """
    split = _get_split(task, split_name)
    horizon = task.info["future"][split_name].shape[1]
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= horizon:
        raise ValueError(f"steps: expected an int in [1, {horizon}], got {steps!r}")
    x, x_mask = split.x.clone(), split.x_mask
    body = x_mask[:, :, -1, :1]  # (n, M, 1)
    out = []
    for _ in range(steps):
        last = x[:, :, -1, :4]  # (n, M, 4)
        state = (last + _to_delta(model.predict(x, x_mask), last, task)) * body  # (n, M, 4)
        out.append(state)
        new = torch.cat([state, x[:, :, -1, 4:]], -1)[:, :, None]  # (n, M, 1, 6)
        x = torch.cat([x[:, :, 1:], new], 2)
    return torch.stack(out, 1)


def rollout_mse(model: Any, task: Task, split_name: str, steps: int = 10) -> float:
    """MSE of the ``(x, y, vx, vy)`` states over a ``steps``-step autoregressive rollout
    (physical units, averaged over steps, real bodies and features)."""
    pred = rollout_states(model, task, split_name, steps)  # (n, S, M, 4)
    true = task.info["future"][split_name][:, :steps]
    body = _get_split(task, split_name).x_mask[:, None, :, -1, :4]  # (n, 1, M, 4)
    err = ((pred - true) ** 2 * body).sum()
    return float(err / (body.sum() * steps))


def _rollout_mse_full(model: Any, task: Task, split_name: str) -> float:
    """``rollout_mse`` over the task's whole ``rollout_steps`` horizon (5 by default)."""
    return rollout_mse(model, task, split_name, steps=int(task.params["rollout_steps"]))


__all__ = ["FEATURES", "delta_scale", "make_nbody", "next_step_nmse", "rollout_mse", "rollout_states", "simulate_split"]
