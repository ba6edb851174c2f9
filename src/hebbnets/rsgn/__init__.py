"""Resonant Sparse Geometry Networks: Poincaré-ball geometry, the sparse model ``"rsgn"``, its
slow local rules (``plasticity``) and the author's dense configuration ``"rsgn_parity"``."""
from . import geometry, plasticity
from .model import RSGN, RSGNConfig
from .parity import RSGNParity, RSGNParityConfig

__all__ = ["RSGN", "RSGNConfig", "RSGNParity", "RSGNParityConfig", "geometry", "plasticity"]
