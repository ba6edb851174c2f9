"""The one training loop: protocol options (optimizer, cosine schedule, gradient clipping, which
weights are restored) and callbacks."""
import copy
import math

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

import hebbnets as hn
from hebbnets.baselines import TrainConfig
from hebbnets.training import Callback, EpochEnd, epoch_lr, make_optimizer, train_backprop


def _data(n=96, d=6, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    x = torch.randn(n, d, generator=g) + 0.8 * torch.nn.functional.one_hot(y, d).float()
    return hn.Split(x, y)


def _mlp(**cfg):
    base = dict(hidden=(16,), epochs=6, batch_size=16, val_fraction=0.25, progress=False)
    return hn.models.make("mlp", seed=0, **{**base, **cfg})


def test_defaults_keep_the_old_protocol():
    cfg = TrainConfig()
    assert (cfg.optimizer, cfg.schedule, cfg.grad_clip, cfg.restore) == ("adam", "constant", 0.0, "best_val_loss")
    m = _mlp(epochs=3)
    m.fit(_data())
    assert m.train_history["lr"] == [1e-3] * 3
    assert type(make_optimizer(m.parameters(), m.config)) is torch.optim.Adam


@pytest.mark.parametrize("field,value", [("optimizer", "sgd"), ("schedule", "step"), ("restore", "best"),
                                         ("grad_clip", -1.0)])
def test_bad_protocol_options_name_the_argument(field, value):
    with pytest.raises(ValueError, match=field):
        TrainConfig(**{field: value})


def test_adamw_decouples_weight_decay():
    # with zero gradient, Adam's L2 decay still moves the weight through the normalised moment
    # (a step of ~lr), AdamW shrinks it by lr * wd only
    for name, expected in (("adam", 1.0 - 0.1), ("adamw", 1.0 - 0.1 * 0.5)):
        p = torch.nn.Parameter(torch.ones(1))
        opt = make_optimizer([p], TrainConfig(optimizer=name, lr=0.1, weight_decay=0.5))
        p.grad = torch.zeros(1)
        opt.step()
        assert float(p.detach()) == pytest.approx(expected, abs=1e-6), name


def test_cosine_schedule_values_match_pytorch():
    cfg = TrainConfig(lr=0.01, epochs=5, schedule="cosine")
    expected = [0.01 * (1 + math.cos(math.pi * e / 5)) / 2 for e in range(5)]
    assert [epoch_lr(cfg, e) for e in range(5)] == pytest.approx(expected)
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([p], lr=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    torch_lrs = []
    for _ in range(5):
        torch_lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert torch_lrs == pytest.approx(expected)
    m = _mlp(epochs=5, lr=0.01, schedule="cosine", restore="last")
    m.fit(_data())
    assert m.train_history["lr"] == pytest.approx(expected)  # the rates the fit really used


def test_gradient_clipping_bounds_every_step():
    seen = []

    def record(opt, args, kwargs):
        grads = [p.grad for g in opt.param_groups for p in g["params"] if p.grad is not None]
        seen.append(float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))))

    handle = register_optimizer_step_pre_hook(record)
    try:
        x = 1e3 * _data().x  # large inputs give gradient norms far above the bound
        big = hn.Split(x, _data().y)
        _mlp(epochs=2).fit(big)
        unclipped, seen[:] = max(seen), []
        m = _mlp(epochs=2, grad_clip=0.5)
        m.fit(big)
    finally:
        handle.remove()
    assert unclipped > 5.0
    assert max(seen) <= 0.5 * (1 + 1e-4)
    assert max(m.train_history["grad_norm"]) > 5.0  # the pre-clipping norm is what gets recorded


def _fit_with_snapshots(**cfg):
    states, accs = [], []

    def snapshot(model, epoch, history):
        assert not model.training  # callbacks see the eval-mode model
        states.append(copy.deepcopy(model.state_dict()))
        accs.append(history["val_accuracy"][-1])

    m = _mlp(**cfg)
    m.callbacks = [EpochEnd(snapshot)]
    m.fit(_data(n=60, seed=3))
    return m, states, accs


def test_best_validation_accuracy_state_is_restored():
    cfg = dict(epochs=12, lr=0.05, val_fraction=0.3, patience=100)
    m, states, accs = _fit_with_snapshots(restore="best_val_accuracy", **cfg)
    best = accs.index(max(accs))  # the first epoch with the highest accuracy
    assert len(states) == 12 and best != len(accs) - 1  # otherwise "best" and "last" coincide
    for k, v in m.state_dict().items():
        torch.testing.assert_close(v, states[best][k])
    last, states_l, _ = _fit_with_snapshots(restore="last", **cfg)
    for k, v in last.state_dict().items():
        torch.testing.assert_close(v, states_l[-1][k])
    assert any(not torch.equal(v, m.state_dict()[k]) for k, v in last.state_dict().items())


def test_best_val_accuracy_needs_classification():
    m = hn.models.make("mlp", hidden=(4,), epochs=1, restore="best_val_accuracy", progress=False)
    with pytest.raises(ValueError, match="restore"):
        m.fit(hn.Split(torch.randn(20, 3), torch.randn(20, 2)))


class _Recorder(Callback):
    def __init__(self):
        self.events = []

    def on_fit_start(self, model, train, val):
        self.events.append(("start", len(train), len(val)))

    def on_step_end(self, model, step, batch, loss):
        assert model.training and loss.grad_fn is None
        self.events.append(("step", step, len(batch), float(loss)))

    def on_epoch_end(self, model, epoch, history):
        assert not model.training
        self.events.append(("epoch", epoch, len(history["train"])))

    def on_fit_end(self, model):
        self.events.append(("end",))


def test_callbacks_run_in_order_after_each_optimiser_step():
    m, rec = _mlp(epochs=2, batch_size=16, val_fraction=0.25), _Recorder()
    weights = []

    class AfterStep(Callback):  # sees the weights the step just wrote
        def on_step_end(self, model, step, batch, loss):
            weights.append(model.net[0].weight.detach().clone())

    m.callbacks = [AfterStep()]
    history = train_backprop_after_build(m, _data(n=64), [rec])
    kinds = [e[0] for e in rec.events]
    assert kinds[0] == "start" and kinds[-1] == "end"
    assert rec.events[0][1:] == (48, 16)
    # 48 training samples, batches of 16: 3 steps per epoch, steps counted over the fit
    assert [e[1] for e in rec.events if e[0] == "step"] == list(range(6))
    assert kinds == ["start", "step", "step", "step", "epoch", "step", "step", "step", "epoch", "end"]
    assert [e[1] for e in rec.events if e[0] == "epoch"] == [0, 1]
    assert history["train"][0] == pytest.approx(sum(e[3] * e[2] for e in rec.events[1:4]) / 48)
    assert len(weights) == 6 and not torch.equal(weights[0], weights[1])


def train_backprop_after_build(model, split, callbacks):
    from hebbnets._model import DataSpec

    model.spec = DataSpec.from_split(split)
    model._build(model.spec)
    return train_backprop(model, split, callbacks=callbacks)


def test_callbacks_must_be_callback_objects():
    m = _mlp(epochs=1)
    m.callbacks = [lambda *a: None]
    with pytest.raises(ValueError, match="^callbacks:"):
        m.fit(_data())
    with pytest.raises(ValueError, match="^fn:"):
        EpochEnd(3)


def test_selectable_restricts_which_epoch_is_restored():
    cfg = dict(epochs=8, lr=0.05, val_fraction=0.3, patience=100, batch_size=16)
    free, _, _ = _fit_with_snapshots(**cfg)
    assert free.selected_epoch < 5  # without a veto an early epoch wins (else the test is vacuous)

    class LateOnly(Callback):
        def selectable(self, model, epoch, history):
            assert not model.training and len(history["val"]) == epoch + 1
            return epoch >= 5

    states = []
    m = _mlp(**cfg)
    m.callbacks = [LateOnly(), EpochEnd(lambda model, epoch, h: states.append(copy.deepcopy(model.state_dict())))]
    m.fit(_data(n=60, seed=3))
    h = m.train_history
    assert h["selectable"] == [0.0] * 5 + [1.0] * 3
    assert m.selected_epoch == 5 + h["val"][5:].index(min(h["val"][5:]))
    for k, v in m.state_dict().items():
        torch.testing.assert_close(v, states[m.selected_epoch][k])


def test_no_selectable_epoch_keeps_the_last_weights_and_does_not_stop_early():
    class Never(Callback):
        def selectable(self, model, epoch, history):
            return False

    m = _mlp(epochs=5, patience=1, val_fraction=0.3)
    m.callbacks = [Never()]
    m.fit(_data(n=60, seed=3))
    assert m.selected_epoch is None and len(m.train_history["val"]) == 5


def test_per_sample_loss_averages_to_the_supervised_loss():
    from hebbnets._model import DataSpec
    from hebbnets.training import per_sample_loss, supervised_loss

    g = torch.Generator().manual_seed(0)
    logits, y = torch.randn(10, 4, generator=g), torch.arange(10) % 4
    split, spec = hn.Split(torch.randn(10, 3), y), DataSpec((3,), (), 4)
    per = per_sample_loss(logits, split, spec)
    assert per.shape == (10,)
    torch.testing.assert_close(per.mean(), supervised_loss(logits, split, spec))
    torch.testing.assert_close(per[2], torch.nn.functional.cross_entropy(logits[2:3], y[2:3]))
    out, target = torch.randn(10, 2, 3, generator=g), torch.randn(10, 2, 3, generator=g)
    reg, rspec = hn.Split(torch.randn(10, 3), target), DataSpec((3,), (2, 3), None)
    per = per_sample_loss(out, reg, rspec)
    torch.testing.assert_close(per, ((out - target) ** 2).mean((1, 2)))
    torch.testing.assert_close(per.mean(), supervised_loss(out, reg, rspec))


def test_compile_trains_the_same_model_as_eager():
    # TrainConfig.compile: torch.compile of the training step's loss; same weights up to float rounding
    import warnings

    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 6, generator=g)
    split = hn.Split(x, x @ torch.randn(6, 2, generator=g))
    cfg = dict(hidden=(8,), epochs=2, batch_size=32, progress=False)
    eager = hn.models.make("mlp", seed=0, **cfg).fit(split)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = hn.models.make("mlp", seed=0, compile=True, **cfg).fit(split)
    torch.testing.assert_close(compiled.predict(x), eager.predict(x), rtol=1e-4, atol=1e-5)


def test_fits_and_predictions_run_with_the_set_thread_count_and_restore_the_callers(monkeypatch):
    seen = []
    model = hn.models.make("mlp", hidden=(4,), epochs=1, progress=False)
    x = torch.randn(16, 3)

    class Probe(hn.training.Callback):
        def on_fit_start(self, model, train, val):
            seen.append(torch.get_num_threads())

    model.callbacks = [Probe()]
    before = torch.get_num_threads()
    try:
        hn.set_threads(2)
        model.fit(hn.Split(x, x))
        assert seen == [2] and torch.get_num_threads() == before  # set during the fit, restored after
        hn.set_threads(None)  # torch's own setting, untouched
        torch.set_num_threads(1)
        model.fit(hn.Split(x, x))
        assert seen[-1] == 1
        with pytest.raises(ValueError, match="^threads:"):
            hn.set_threads(0)
    finally:
        hn.set_threads(1)
        torch.set_num_threads(before)
