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
    fewer_laws = torch.tensor([law in p["fewer_laws"] for law in nbody.LAWS])  # (4,)
    # training and id: exactly one law; N in [n_min, n_max], or N = n_fewer with a law of fewer_laws
    for key in ("train", "id"):
        assert bool((act[key].sum(1) == 1).all())
        many = (nb[key] >= p["n_min"]) & (nb[key] <= p["n_max"])
        few = (nb[key] == p["n_fewer"]) & (act[key] & fewer_laws).any(1)
        assert bool((many | few).all())
    for key in ("ood_forces", "ood_both"):
        assert bool((act[key].sum(1) >= 2).all())
    for key in ("ood_fewer", "ood_both"):
        assert bool((nb[key] == p["n_fewer"]).all())
    # ood_fewer: a single law never trained with n_fewer bodies
    assert bool((act["ood_fewer"].sum(1) == 1).all()) and not bool((act["ood_fewer"] & fewer_laws).any())
    assert bool(((nb["ood_forces"] >= p["n_min"]) & (nb["ood_forces"] <= p["n_max"])).all())


def test_every_law_and_body_count_of_the_ood_splits_is_trained_only_the_combination_is_new():
    big = hn.tasks.make("nbody", seed=0, n_train=400, n_test=60, rollout_steps=1, substeps=1)
    act, nb = big.info["active_laws"], big.info["n_bodies"]
    trained_pairs = {(law, int(n)) for a, n in zip(act["train"], nb["train"]) for law in a.nonzero().flatten().tolist()}
    trained_laws = {law for law, _ in trained_pairs}
    trained_counts = {n for _, n in trained_pairs}
    assert trained_laws == set(range(len(nbody.LAWS)))
    for key in ("ood_forces", "ood_fewer", "ood_both"):
        laws = set(act[key].nonzero()[:, 1].tolist())
        counts = set(nb[key].tolist())
        assert laws <= trained_laws and counts <= trained_counts, key
    # what is new: several laws at once (ood_forces, ood_both) or a (law, N) pair (ood_fewer)
    fewer_pairs = {(law, int(n)) for a, n in zip(act["ood_fewer"], nb["ood_fewer"]) for law in a.nonzero().flatten().tolist()}
    assert fewer_pairs and not fewer_pairs & trained_pairs


def test_law_strengths_vary_per_system_within_the_spread(task):
    p = task.params
    nominal = torch.tensor([float(p[law]) for law in nbody.LAWS])
    for key, s in task.info["strengths"].items():
        act = task.info["active_laws"][key]
        assert bool((s[~act] == 0).all())  # inactive laws are off
        ratio = s[act] / nominal.expand_as(s)[act]
        assert float(ratio.min()) >= 1 - p["strength_spread"] - 1e-6
        assert float(ratio.max()) <= 1 + p["strength_spread"] + 1e-6
    ratio = task.info["strengths"]["train"][task.info["active_laws"]["train"]]
    assert len(torch.unique(ratio)) > 10  # not one value per law
    fixed = hn.tasks.make("nbody", seed=3, strength_spread=0.0, **TINY)
    act = fixed.info["active_laws"]["train"]
    torch.testing.assert_close(fixed.info["strengths"]["train"][act], nominal.expand(len(act), 4)[act])


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
    with pytest.raises(ValueError, match="strength_spread"):
        hn.tasks.make("nbody", seed=0, strength_spread=1.0, **TINY)
    for bad in (("drag", "drag"), ("gravity", "drag", "lorentz", "spring"), ("friction",), ()):
        with pytest.raises(ValueError, match="fewer_laws"):
            hn.tasks.make("nbody", seed=0, fewer_laws=bad, **TINY)
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
    "window_linear": {},
    "system_ridge": {},
    "vn_applied_set": dict(atoms=8, content=6, hidden=8, epochs=1, max_iter=10, progress=False),
    "set_mlp": dict(content=6, hidden=8, summary=4, epochs=1, progress=False),
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
