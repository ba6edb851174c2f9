import torch

import hebbnets as hn
from hebbnets.baselines import supervised_loss


def test_masked_prediction_is_trained_on_hidden_entries_only():
    y = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    mask = torch.tensor([[1.0, 0.0, 0.0, 1.0]])
    out = torch.tensor([[9.0, 2.5, 3.0, -9.0]])  # wrong on observed entries, close on hidden ones
    spec = hn.DataSpec((4,), (4,), None, True)
    scored = hn.Split(y * mask, y, x_mask=mask, metric="mse_missing")
    assert float(supervised_loss(out, scored, spec)) == (0.5**2 + 0.0) / 2
    plain = hn.Split(y * mask, y, x_mask=mask)  # scored by plain MSE: every entry counts
    assert float(supervised_loss(out, plain, spec)) == (64 + 0.25 + 0 + 169) / 4
    both = hn.Split(y * mask, y, x_mask=mask, y_mask=torch.tensor([[1.0, 0.0, 1.0, 1.0]]), metric="mse_missing")
    assert float(supervised_loss(out, both, spec)) == 0.0  # only entry 2 is hidden and observed
