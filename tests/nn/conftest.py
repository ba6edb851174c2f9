"""The ``device`` fixture of the ``hebbnets.nn`` tests: CPU always, CUDA when one is present."""
import pytest
import torch


@pytest.fixture(params=["cpu", "cuda"])
def device(request) -> torch.device:
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")
    return torch.device(request.param)
