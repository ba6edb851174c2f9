"""Split validation: every bad input raises one ValueError naming the argument."""
import numpy as np
import pytest
import torch

import hebbnets as hn

X = torch.randn(6, 3)
Y = torch.randn(6, 2)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(x=torch.randn(6, 3), y=torch.randn(5, 2)), "y"),  # mismatched lengths
        (dict(x=torch.randn(6), y=Y), "x"),  # wrong rank
        (dict(x=torch.ones(6, 3, dtype=torch.long), y=Y), "x"),  # non-float
        (dict(x=torch.full((6, 3), float("nan")), y=Y), "x"),  # NaN
        (dict(x=X, y=torch.full((6, 2), float("inf"))), "y"),  # Inf
        (dict(x=torch.randn(0, 3), y=torch.randn(0, 2)), "x"),  # empty
        (dict(x=X, y=torch.ones(6, 2, dtype=torch.bool)), "y"),  # bool targets
        (dict(x=X, y=torch.tensor([0, 1, -1, 0, 1, 0])), "y"),  # negative labels
        (dict(x=X, y=Y, x_mask=torch.ones(6, 2)), "x_mask"),  # mask shape
        (dict(x=X, y=Y, y_mask=torch.full((6, 2), 2.0)), "y_mask"),  # mask values
        (dict(x=X, y=torch.tensor([0, 1, 1, 0, 1, 0]), y_mask=torch.ones(6)), "y_mask"),
        (dict(x=X, y=Y, metric="r2"), "metric"),
    ],
)
def test_bad_input_names_the_argument(kwargs, word):
    with pytest.raises(ValueError, match=rf"^{word}:"):
        hn.Split(**kwargs)


def test_accepts_numpy_bool_masks_and_scalar_targets():
    s = hn.Split(np.random.rand(4, 2), np.random.rand(4), x_mask=np.ones((4, 2), dtype=bool))
    assert s.y.shape == (4, 1) and s.x_mask.dtype == s.x.dtype and len(s) == 4
    sub = s.subset(torch.tensor([0, 2]))
    assert len(sub) == 2 and torch.equal(sub.x, s.x[[0, 2]])


def test_integer_targets_are_classification():
    s = hn.Split(X, torch.tensor([0, 1, 2, 0, 1, 2]))
    assert s.is_classification and s.y.dtype == torch.long
