"""Resonant Sparse Geometry Networks: Poincaré-ball geometry, the sparse model ``"rsgn"``, its
slow local rules (``plasticity``), the author's dense configuration ``"rsgn_parity"``, and the cost
measurements behind ``benchmarks/rsgn_scaling.py`` (graph build, ignition, training step)."""
from . import geometry, plasticity
from ._speed import (cost_scaling, graph_build_speed, ignition_speed, segment_slope_intervals, segment_slopes,
                     training_step_cost)
from .model import RSGN, RSGNConfig
from .parity import RSGNParity, RSGNParityConfig

__all__ = ["RSGN", "RSGNConfig", "RSGNParity", "RSGNParityConfig", "cost_scaling", "geometry", "graph_build_speed",
           "ignition_speed", "plasticity", "segment_slope_intervals", "segment_slopes", "training_step_cost"]
