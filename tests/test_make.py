"""``hn.models.make``: a per-layer field accepts one int; a task without a chosen configuration
for the model says so."""
import warnings

import pytest

import hebbnets as hn
from hebbnets.models import UntunedConfigWarning


def test_one_int_for_a_per_layer_field_means_one_layer():
    assert hn.models.make("vn", atoms=64).config.atoms == (64,)
    assert hn.models.make("mlp", hidden=32).config.hidden == (32,)
    with pytest.raises(ValueError, match="atoms"):
        hn.models.make("vn", atoms="64")


def test_a_task_without_a_chosen_config_warns_and_one_with_it_does_not():
    untuned = hn.tasks.make("functions1d_continual", mode="reconstruct", n_train=20, n_test=10)
    with pytest.warns(UntunedConfigWarning, match="'vn'"):
        hn.models.make("vn", task=untuned)
    tuned = hn.tasks.make("toy_atoms", n_train=20, n_test=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntunedConfigWarning)
        hn.models.make("vn", task=tuned)  # toy_atoms.json holds a choice for vn
        hn.models.make("zeros", task=untuned)  # nothing to tune: no warning
