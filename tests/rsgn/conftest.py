import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    # tiny tensors: thread start-up dominates (and the CI box is shared); restore afterwards
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
