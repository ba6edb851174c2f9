"""Task registry: ``hn.tasks.make(name, seed=0, scale="quick", **params)`` and ``names()``.

Each task module registers itself with ``@register_task(name)``; importing this package
imports them all.
"""
from ._task import SCALES, VALIDATION_SEED, Task, check_params, make, names, register_task, validation_split
from . import toy_atoms  # noqa: F401  (registers "toy_atoms")
from . import functions1d, spatial2d  # noqa: F401  (register "functions1d", "spatial2d")
from . import mnist_comp, nbody  # noqa: F401  (register "mnist_comp", "nbody")
from . import continual  # noqa: F401  (register "functions1d_continual", "mnist_continual")
from . import rsgn_tasks  # noqa: F401  (register "rsgn_hierarchical", "rsgn_longrange", "rsgn_tree", "rsgn_xor_range")

__all__ = ["SCALES", "VALIDATION_SEED", "Task", "check_params", "make", "names", "register_task", "validation_split"]
