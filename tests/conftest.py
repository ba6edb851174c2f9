"""Test-wide settings.

One intra-op thread: the suite's tensors are tiny, and with OpenMP's spinning barriers a second
thread makes small matmuls orders of magnitude slower whenever the other core is busy.
"""
import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(params=["cpu", "cuda"])
def device(request) -> torch.device:
    """Every available device: the CPU always, CUDA when present (skipped with the reason)."""
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")
    return torch.device(request.param, 0) if request.param == "cuda" else torch.device("cpu")
