"""Test-wide settings.

One intra-op thread: the suite's tensors are tiny, and with OpenMP's spinning barriers a second
thread makes small matmuls orders of magnitude slower whenever the other core is busy.
"""
import torch

torch.set_num_threads(1)
