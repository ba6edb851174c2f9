"""The ``nbody`` task: determinism, split construction, targets, normalised and rollout metrics."""
import pytest
import torch

import hebbnets as hn
from hebbnets.tasks import nbody

TINY = dict(n_train=40, n_test=12, rollout_steps=3, substeps=2)


@pytest.fixture(scope="module")
def task():
    return hn.tasks.make("nbody", seed=3, **TINY)


def test_deterministic_under_seed(task):
    again = hn.tasks.make("nbody", seed=3, **TINY)
    other = hn.tasks.make("nbody", seed=4, **TINY)
    assert torch.equal(again.train.x, task.train.x) and torch.equal(again.train.y, task.train.y)
    for key in task.tests:
        assert torch.equal(again.tests[key].x, task.tests[key].x)
        assert torch.equal(again.info["future"][key], task.info["future"][key])
    assert not torch.equal(other.train.x, task.train.x)


def test_shapes_and_padding(task):
    p = task.params
    m, w = p["n_max"], p["window"]
    assert task.train.x.shape == (40, m, w, 6) and task.train.y.shape == (40, m, 4)
    assert set(task.tests) == {"id", "ood_forces", "ood_fewer", "ood_both"}
    for key, split in [("train", task.train), *task.tests.items()]:
        n_bodies = task.info["n_bodies"][key]
        body = split.x_mask[:, :, 0, 0]  # (n, M)
        assert torch.equal(body.sum(1).long(), n_bodies)
        # padded bodies: zero inputs, zero targets, masked everywhere
        pad = body == 0
        assert bool((split.x[pad] == 0).all()) and bool((split.y[pad] == 0).all())
        assert bool((split.y_mask[pad] == 0).all()) and bool((split.y_mask[~pad] == 1).all())
        assert bool((split.x_mask[~pad] == 1).all())


def test_ood_conditions_absent_from_training(task):
    p = task.params
    act, nb = task.info["active_laws"], task.info["n_bodies"]
    # training and id: exactly one law, N in the training range
    for key in ("train", "id"):
        assert bool((act[key].sum(1) == 1).all())
        assert bool(((nb[key] >= p["n_min"]) & (nb[key] <= p["n_max"])).all())
    for key in ("ood_forces", "ood_both"):
        assert bool((act[key].sum(1) >= 2).all())
    for key in ("ood_fewer", "ood_both"):
        assert bool((nb[key] == p["n_fewer"]).all()) and p["n_fewer"] < int(nb["train"].min())
    assert bool((act["ood_fewer"].sum(1) == 1).all())
    assert bool(((nb["ood_forces"] >= p["n_min"]) & (nb["ood_forces"] <= p["n_max"])).all())
    # every single law is trained (so ood_forces only recombines familiar factors)
    big = hn.tasks.make("nbody", seed=0, n_train=200, n_test=5, rollout_steps=1, substeps=1)
    assert bool((big.info["active_laws"]["train"].sum(0) > 0).all())


def test_targets_are_scaled_next_step_changes(task):
    scale = task.info["target_scale"]
    for key, split in task.tests.items():
        last = split.x[:, :, -1, :4]  # (n, M, 4)
        nxt = task.info["future"][key][:, 0]  # (n, M, 4)
        torch.testing.assert_close(split.y * scale * split.y_mask, (nxt - last) * split.y_mask, rtol=1e-4, atol=1e-5)
        # masses and charges are constant over the window
        assert torch.equal(split.x[:, :, :1, 4:].expand_as(split.x[..., 4:]), split.x[..., 4:])
    state = hn.tasks.make("nbody", seed=3, target="state", **TINY)
    torch.testing.assert_close(state.tests["id"].y, task.info["future"]["id"][:, 0] * task.tests["id"].y_mask[..., :4])


class _Zero:
    """Predicts "no change"."""

    def predict(self, x, x_mask=None):
        return torch.zeros(x.shape[0], x.shape[1], 4)


class _Oracle:
    """Looks the true next change up by the nearest stored true window (exact on true windows)."""

    def __init__(self, task, key):
        split, fut = task.tests[key], task.info["future"][key]
        windows, deltas = [], []
        x = split.x.clone()
        for k in range(fut.shape[1]):
            last = x[:, :, -1, :4]
            windows.append(x.clone())
            deltas.append((fut[:, k] - last) * split.y_mask / task.info["target_scale"])
            new = torch.cat([fut[:, k] * split.y_mask, x[:, :, -1, 4:]], -1)[:, :, None]
            x = torch.cat([x[:, :, 1:], new], 2)
        self.windows = torch.cat(windows).flatten(1)
        self.deltas = torch.cat(deltas)

    def predict(self, x, x_mask=None):
        d = torch.cdist(x.flatten(1), self.windows)  # (n, table)
        return self.deltas[d.argmin(1)]


def test_rollout_and_nmse_with_reference_predictors(task):
    for key in task.tests:
        split = task.tests[key]
        assert nbody.next_step_nmse(_Zero(), task, key) == pytest.approx(1.0)
        oracle = _Oracle(task, key)
        assert nbody.next_step_nmse(oracle, task, key) < 1e-8
        assert nbody.rollout_mse(oracle, task, key, steps=3) < 1e-8
        # "no change" rollout: every future state against the last observed one
        last = split.x[:, None, :, -1, :4]
        body = split.y_mask[:, None]
        fut = task.info["future"][key]
        expect = float(((fut - last) ** 2 * body).sum() / (body.sum() * 3))
        assert nbody.rollout_mse(_Zero(), task, key, steps=3) == pytest.approx(expect, rel=1e-5)
        assert nbody.rollout_states(_Zero(), task, key, steps=2).shape == (len(split), 2, split.x.shape[1], 4)


def test_bad_arguments_raise(task):
    with pytest.raises(ValueError, match="params"):
        hn.tasks.make("nbody", seed=0, bogus=1)
    with pytest.raises(ValueError, match="n_fewer"):
        hn.tasks.make("nbody", seed=0, n_fewer=3, **TINY)
    with pytest.raises(ValueError, match="target"):
        hn.tasks.make("nbody", seed=0, target="velocity", **TINY)
    with pytest.raises(ValueError, match="drag"):
        hn.tasks.make("nbody", seed=0, drag=0.0, **TINY)
    with pytest.raises(ValueError, match="steps"):
        nbody.rollout_mse(_Zero(), task, "id", steps=4)
    with pytest.raises(ValueError, match="split_name"):
        nbody.rollout_mse(_Zero(), task, "ood_nope")
    with pytest.raises(ValueError, match="task"):
        nbody.next_step_nmse(_Zero(), "nbody", "id")


TINY_MODELS = {
    "mlp": dict(hidden=(16,), epochs=2, progress=False),
    "gnn": dict(hidden=8, epochs=2, progress=False),
    "transformer": dict(d_model=8, n_heads=2, n_layers=1, d_ff=16, epochs=2, progress=False),
    "vn": dict(atoms=(8,), epochs=1, max_iter=10, progress=False),
}


@pytest.mark.parametrize("name", sorted(TINY_MODELS))
def test_registered_models_fit_predict_and_roll_out(task, name):
    model = hn.models.make(name, seed=0, task=task, **TINY_MODELS[name]).fit(task.train)
    pred = model.predict(task.tests["id"].x, task.tests["id"].x_mask)
    assert pred.shape == task.tests["id"].y.shape and bool(torch.isfinite(pred).all())
    for key in task.tests:
        assert model.score(task.tests[key]) >= 0
        assert torch.isfinite(torch.tensor(nbody.rollout_mse(model, task, key, steps=2)))


def test_runner_records_nmse_and_full_horizon_rollout(task):
    """``hebbnets run nbody`` reports the normalised next-step MSE and the rollout MSE over the
    task's whole horizon (rollout_steps), through the task's extra_metrics."""
    from hebbnets.bench import run

    recs = run(task, ["mlp"], [0], overrides={"mlp": dict(epochs=1, hidden=(8,), progress=False)})
    by = {(r["split"], r["metric"]): r["value"] for r in recs}
    assert {m for _, m in by} == {"mse", "next_step_nmse", "rollout_mse"}
    m = hn.models.make("mlp", seed=0, task=task, epochs=1, hidden=(8,), progress=False).fit(task.train)
    for key in task.tests:
        assert by[(key, "rollout_mse")] == pytest.approx(nbody.rollout_mse(m, task, key, steps=3), rel=1e-6)
        assert by[(key, "next_step_nmse")] == pytest.approx(nbody.next_step_nmse(m, task, key), rel=1e-6)
