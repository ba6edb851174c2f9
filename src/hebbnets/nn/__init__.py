"""``hebbnets.nn``: Vector-Network and RSGN layers for other people's networks.

Each is an ``nn.Module`` with a ``forward`` (shapes in its docstring) that works on any device
and floating dtype of its parameters:

* ``VNLayer``: a sparse code by batched FISTA, output ``U g``;
* ``MatrixAtomLayer``: a sparse matrix code, output the composed operator ``U G S^T``;
* ``AppliedAtomLayer``: a context's sparse code selects ``W* = U diag(g) S^T``, applied to a
  content input;
* ``RSGNEncoder``: a token sequence ``(B, T, d)`` to pooled features ``(B, d_out)`` by the sparse
  RSGN's ignition and propagation, slow rules as explicit calls.

The VN layers learn end to end (gradients through the LASSO solution by implicit
differentiation on its active set, ``hebbnets.nn.implicit``) or locally (``hebb_step``: the
Atomic-Hebb rule). ``sparse_code`` is the differentiable LASSO code as a function.
"""
from .implicit import active_set_solve, implicit_lasso, sparse_code
from .layers import AppliedAtomLayer, MatrixAtomLayer, VNLayer
from .rsgn_encoder import RSGNEncoder

__all__ = ["AppliedAtomLayer", "MatrixAtomLayer", "RSGNEncoder", "VNLayer", "active_set_solve", "implicit_lasso",
           "sparse_code"]
