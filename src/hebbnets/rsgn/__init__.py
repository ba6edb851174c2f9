"""Resonant Sparse Geometry Networks: Poincaré-ball geometry, the sparse model ``"rsgn"`` and
the author's dense configuration ``"rsgn_parity"``."""
from . import geometry
from .model import RSGN, RSGNConfig
from .parity import RSGNParity, RSGNParityConfig

__all__ = ["RSGN", "RSGNConfig", "RSGNParity", "RSGNParityConfig", "geometry"]
