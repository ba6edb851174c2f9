"""Correctness of the N-body simulator against closed forms and conservation laws."""
import math

import pytest
import torch

from hebbnets.tasks._nbody_sim import (
    ForceParams, Forces, accelerations, accelerations_reference, energy, momentum, pseudo_momentum, simulate,
)

DT = torch.float64


def _random_system(b=3, n=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = torch.randn(b, n, 2, generator=g, dtype=DT)
    v = 0.5 * torch.randn(b, n, 2, generator=g, dtype=DT)
    m = 0.5 + torch.rand(b, n, generator=g, dtype=DT)
    q = torch.randn(b, n, generator=g, dtype=DT)
    return r, v, m, q


def test_vectorised_accelerations_match_loop_reference():
    r, v, m, q = _random_system(b=4, n=5)
    mask = torch.ones(4, 5, dtype=DT)
    mask[1, 3:] = 0  # a padded system
    m = torch.where(mask > 0, m, torch.zeros_like(m))
    params = [ForceParams(1.0, 0.3, -1.5, 0.7, softening=0.2, rest_length=0.8),
              ForceParams(gravity=2.0, softening=0.0),
              ForceParams(drag=0.5, lorentz=2.0),
              ForceParams(spring=3.0, rest_length=0.0)]
    f = Forces.stack(params)
    fast = accelerations(r, v, m, q, mask, f)
    slow = accelerations_reference(r, v, m, q, mask, f)
    torch.testing.assert_close(fast, slow, rtol=1e-10, atol=1e-12)
    assert torch.equal(fast[1, 3:], torch.zeros(2, 2, dtype=DT))


def test_two_body_gravity_orbit_period_matches_kepler():
    # an eccentric orbit: the semi-major axis from the vis-viva equation fixes the period
    G, m1, m2, r0, v0 = 1.0, 1.0, 0.5, 1.0, 0.9
    M = m1 + m2
    a = 1.0 / (2.0 / r0 - v0**2 / (G * M))
    period = 2 * math.pi * math.sqrt(a**3 / (G * M))
    # centre-of-mass frame: relative separation r0 along x, relative velocity v0 along y
    r = torch.tensor([[[-m2 / M * r0, 0.0], [m1 / M * r0, 0.0]]], dtype=DT)
    v = torch.tensor([[[0.0, -m2 / M * v0], [0.0, m1 / M * v0]]], dtype=DT)
    m = torch.tensor([[m1, m2]], dtype=DT)
    f = Forces.broadcast(ForceParams(gravity=G, softening=0.0), 1)
    steps = 200
    traj = simulate(r, v, m, torch.zeros_like(m), f, n_steps=steps, dt=period / steps, substeps=4)
    rel = traj[0, :, 1, :2] - traj[0, :, 0, :2]  # (T+1, 2)
    assert torch.allclose(rel[-1], rel[0], atol=1e-4)  # back after exactly one period
    dist = rel.norm(dim=-1)
    # apocentre at half period, at distance 2a - r0, and the orbit is far from the start there
    assert abs(float(dist[steps // 2]) - (2 * a - r0)) < 1e-4
    assert float((rel[steps // 2] - rel[0]).norm()) > 1.0


def test_momentum_conserved_without_drag_and_pseudo_momentum_with_lorentz():
    r, v, m, q = _random_system(b=2, n=4, seed=1)
    f = Forces.broadcast(ForceParams(gravity=1.0, spring=1.0, softening=0.3), 2)
    traj = simulate(r, v, m, q, f, n_steps=50, dt=0.02, substeps=2)
    mask = torch.ones_like(m)
    p0, p1 = momentum(traj[:, 0, :, 2:], m, mask), momentum(traj[:, -1, :, 2:], m, mask)
    torch.testing.assert_close(p1, p0, rtol=0, atol=1e-10)
    assert float((traj[:, -1] - traj[:, 0]).abs().max()) > 0.05  # something did move

    # a uniform field exerts an external force; m v - q r x B is what internal forces keep
    f = Forces.broadcast(ForceParams(gravity=1.0, spring=1.0, lorentz=2.0, softening=0.3), 2)
    traj = simulate(r, v, m, q, f, n_steps=50, dt=0.02, substeps=2)
    end = traj[:, -1]
    assert float((momentum(end[..., 2:], m, mask) - momentum(v, m, mask)).abs().max()) > 1e-3
    torch.testing.assert_close(pseudo_momentum(end[..., :2], end[..., 2:], m, q, mask, f),
                               pseudo_momentum(r, v, m, q, mask, f), rtol=0, atol=1e-10)


def test_drag_only_matches_closed_form():
    r, v, m, q = _random_system(b=2, n=3, seed=2)
    gamma, dt, steps = 0.7, 0.05, 40
    traj = simulate(r, v, m, q, Forces.broadcast(ForceParams(drag=gamma), 2), n_steps=steps, dt=dt, substeps=4)
    t = torch.arange(steps + 1, dtype=DT) * dt  # (T+1,)
    decay = torch.exp(-gamma * t[None, :, None] / m[:, None, :])[..., None]  # (B, T+1, N, 1)
    v_exact = v[:, None] * decay
    x_exact = r[:, None] + v[:, None] * (m[:, None, :, None] / gamma) * (1 - decay)
    torch.testing.assert_close(traj[..., 2:], v_exact, rtol=0, atol=1e-8)
    torch.testing.assert_close(traj[..., :2], x_exact, rtol=0, atol=1e-8)


def test_lorentz_keeps_speed_and_gyrates_at_cyclotron_frequency():
    r, v, m, q = _random_system(b=2, n=3, seed=3)
    B = 1.5
    traj = simulate(r, v, m, q, Forces.broadcast(ForceParams(lorentz=B), 2), n_steps=100, dt=0.05, substeps=2)
    speed = traj[..., 2:].norm(dim=-1)  # (B, T+1, N)
    torch.testing.assert_close(speed, speed[:, :1].expand_as(speed), rtol=1e-6, atol=0)
    # velocity rotates at omega = q B / m (clockwise for q B > 0)
    omega = q * B / m  # (B, N)
    t = 100 * 0.05
    c, s = torch.cos(omega * t), torch.sin(omega * t)
    vx, vy = v[..., 0], v[..., 1]
    v_exact = torch.stack([c * vx + s * vy, -s * vx + c * vy], -1)
    torch.testing.assert_close(traj[:, -1, :, 2:], v_exact, rtol=0, atol=1e-6)


def test_energy_drift_of_pure_gravity_is_small_and_springs_conserve_too():
    r, v, m, q = _random_system(b=3, n=5, seed=4)
    mask = torch.ones_like(m)
    for params in (ForceParams(gravity=1.0, softening=0.2), ForceParams(gravity=0.5, spring=1.0, softening=0.2)):
        f = Forces.broadcast(params, 3)
        traj = simulate(r, v, m, q, f, n_steps=200, dt=0.01, substeps=2)
        e0 = energy(r, v, m, mask, f)
        e1 = energy(traj[:, -1, :, :2], traj[:, -1, :, 2:], m, mask, f)
        assert float(((e1 - e0).abs() / e0.abs()).max()) < 1e-5
    # drag dissipates
    f = Forces.broadcast(ForceParams(gravity=1.0, drag=0.5, softening=0.2), 3)
    traj = simulate(r, v, m, q, f, n_steps=50, dt=0.02)
    assert bool((energy(traj[:, -1, :, :2], traj[:, -1, :, 2:], m, mask, f) < energy(r, v, m, mask, f)).all())


def test_padded_bodies_are_inert_and_do_not_affect_real_ones():
    r, v, m, q = _random_system(b=1, n=4, seed=5)
    f = Forces.broadcast(ForceParams(gravity=1.0, spring=1.0, drag=0.2, lorentz=1.0), 1)
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]], dtype=DT)
    padded = simulate(r, v, m, q, f, 10, 0.05, mask=mask)
    alone = simulate(r[:, :3], v[:, :3], m[:, :3], q[:, :3], f, 10, 0.05)
    torch.testing.assert_close(padded[:, :, :3], alone, rtol=1e-12, atol=1e-12)
    assert torch.equal(padded[:, -1, 3], padded[:, 0, 3])


@pytest.mark.parametrize("kwargs, arg", [
    (dict(dt=0.0), "dt"), (dict(n_steps=-1), "n_steps"), (dict(substeps=0), "substeps"),
])
def test_simulate_rejects_bad_arguments(kwargs, arg):
    r, v, m, q = _random_system(b=1, n=2)
    args = dict(n_steps=1, dt=0.1, substeps=1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=arg):
        simulate(r, v, m, q, Forces.broadcast(ForceParams(), 1), **args)


def test_bad_state_and_params_raise():
    r, v, m, q = _random_system(b=1, n=2)
    f = Forces.broadcast(ForceParams(gravity=1.0), 1)
    with pytest.raises(ValueError, match="^m:"):
        simulate(r, v, -m, q, f, 1, 0.1)
    with pytest.raises(ValueError, match="^r:"):
        simulate(r[..., :1], v, m, q, f, 1, 0.1)
    bad = r.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="^r:"):
        simulate(bad, v, m, q, f, 1, 0.1)
    with pytest.raises(ValueError, match="^drag:"):
        ForceParams(drag=-1.0)
    with pytest.raises(ValueError, match="^law:"):
        ForceParams.only("magic", 1.0)
