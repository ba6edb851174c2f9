"""The VN-family epoch loop: validation carved from training only, best atoms kept, patience."""
from dataclasses import dataclass

import pytest
import torch
from torch import nn

import hebbnets as hn
from hebbnets._model import Model
from hebbnets.training import carve_validation
from hebbnets.vn._fit import fit_local


@dataclass
class _Cfg:
    epochs: int = 10
    batch_size: int = 4
    val_fraction: float = 0.25
    patience: int = 2
    progress: bool = False


class _Scripted(Model):
    """A model whose validation error after epoch e is ``script[e]``; its state is the epoch."""

    Config = _Cfg

    def __init__(self, script, **cfg):
        super().__init__(_Cfg(**cfg))
        self.script = script
        self.seen: list[torch.Tensor] = []

    def _build(self, spec):
        self.register_buffer("epoch", torch.zeros((), dtype=torch.long))
        self.register_buffer("batches", torch.zeros((), dtype=torch.long))

    def _fit(self, split):
        n_batches = -(-len(split) * (1 - self.config.val_fraction) // self.config.batch_size)

        def learn(i):
            self.seen.append(i)
            self.batches += 1
            if int(self.batches) % n_batches == 0:
                self.epoch += 1
            return float(len(i))

        fit_local(self, split, learn, desc="test")

    def _predict(self, x, x_mask):
        # MSE against zero targets = the scripted error of the epoch just finished
        e = self.script[int(self.epoch) - 1]
        return torch.full((x.shape[0], 1), e**0.5)


def _split(n=16):
    return hn.Split(torch.randn(n, 2), torch.zeros(n, 1))


def test_keeps_best_epoch_and_stops_after_patience():
    script = [5.0, 4.0, 3.0, 3.5, 3.2, 1.0, 0.5]
    m = _Scripted(script)
    m.fit(_split())
    h = m.train_history
    assert h["val"] == pytest.approx([5.0, 4.0, 3.0, 3.5, 3.2])  # two epochs without improvement: stop
    assert h["best_epoch"] == [2] and int(m.epoch) == 3  # the state of epoch 2 (0-based) is restored
    assert len(h["energy"]) == 5


def test_validation_is_carved_from_training_and_never_trained_on():
    m = _Scripted([1.0] * 10, patience=100, epochs=3)
    split = _split(20)
    m.fit(split)
    _, val_idx = carve_validation(20, 0.25, torch.Generator().manual_seed(0))
    seen = torch.cat(m.seen)
    assert len(seen) == 3 * 15 and not bool(torch.isin(seen, val_idx).any())
    assert set(seen.tolist()) | set(val_idx.tolist()) == set(range(20))


def test_no_validation_runs_every_epoch_on_every_sample():
    m = _Scripted([5.0, 1.0, 9.0], val_fraction=0.0, epochs=3)
    m.fit(_split(12))
    assert m.train_history["val"] == [] and m.train_history["best_epoch"] == [2]
    assert int(m.epoch) == 3 and len(torch.cat(m.seen)) == 36


def test_vn_data_init_never_sees_validation_samples():
    x = torch.randn(40, 6)
    y = torch.randn(40, 3)
    m = hn.models.make("vn", seed=0, atoms=(30,), epochs=1, rho_s=0.0, rho_u=0.0, norm_policy="none", reseed_after=0,
                       val_fraction=0.25, progress=False).fit(hn.Split(x, y))
    _, val_idx = carve_validation(40, 0.25, torch.Generator().manual_seed(0))
    unit = x / x.norm(dim=1, keepdim=True)  # (40, 6)
    S = m.layers[0].S.T  # (30, 6): normalised training inputs
    source = torch.cdist(S, unit).argmin(dim=1)  # which sample each atom came from
    torch.testing.assert_close(S, unit[source])
    assert not bool(torch.isin(source, val_idx).any())
    assert len(m.train_history["val"]) == 1


# -- one config base and one test_lam rule for the VN family (issue 27) ---------------------------
from hebbnets.vn._fit import LocalFitConfig  # noqa: E402
from hebbnets.vn.applied_model import AppliedVNConfig  # noqa: E402
from hebbnets.vn.applied_set import AppliedSetConfig  # noqa: E402
from hebbnets.vn.matrix import MatrixVNConfig  # noqa: E402
from hebbnets.vn.network import VNConfig  # noqa: E402
from hebbnets.vn.pairs import PairVNConfig  # noqa: E402

LOCAL_CONFIGS = (VNConfig, AppliedVNConfig, MatrixVNConfig, PairVNConfig)


@pytest.mark.parametrize("config", LOCAL_CONFIGS, ids=lambda c: c.__name__)
def test_every_vn_config_shares_the_training_fields_and_the_test_lam_rule(config):
    import dataclasses

    assert issubclass(config, LocalFitConfig)
    shared = {f.name for f in dataclasses.fields(LocalFitConfig)}
    assert shared <= {f.name for f in dataclasses.fields(config)}
    cfg = config(lam=0.02)
    assert cfg.lam_for("train") == 0.02 and cfg.lam_for("predict") == 0.02  # test_lam None: lam
    cfg = config(lam=0.02, test_lam=0.005)
    assert cfg.lam_for("train") == 0.02 and cfg.lam_for("predict") == 0.005
    with pytest.raises(ValueError, match="phase"):
        cfg.lam_for("test")
    # the shared fields are validated by the base, naming the argument
    for bad in ({"val_fraction": 1.0}, {"patience": 0}, {"epochs": -1}, {"batch_size": 1.5}, {"dtype": "float16"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            config(**bad)


def test_the_backprop_trained_applied_set_reading_uses_the_same_rule():
    from hebbnets.vn._fit import lam_for

    assert lam_for(AppliedSetConfig(lam=0.1), "predict") == 0.1
    assert lam_for(AppliedSetConfig(lam=0.1, test_lam=0.02), "predict") == 0.02
    assert lam_for(AppliedSetConfig(lam=0.1, test_lam=0.02), "train") == 0.1


def test_vn_per_layer_weights_follow_the_rule():
    cfg = VNConfig(atoms=(8, 4), hidden=(5,), lam=(0.1, 0.2))
    assert cfg.lams_for("train") == (0.1, 0.2) and cfg.lams_for("predict") == (0.1, 0.2)
    cfg = VNConfig(atoms=(8, 4), hidden=(5,), lam=(0.1, 0.2), test_lam=0.05)
    assert cfg.lams_for("predict") == (0.05, 0.05) and cfg.per_layer("test_lam") == (0.05, 0.05)
    with pytest.raises(ValueError, match="test_lam"):
        VNConfig(atoms=(8, 4), hidden=(5,), test_lam=(0.1, 0.2, 0.3))
