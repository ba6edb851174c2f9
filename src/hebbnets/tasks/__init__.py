"""Task registry: ``hn.tasks.make(name, seed=0, scale="quick", **params)`` and ``names()``.

Each task module registers itself with ``@register_task(name)``; importing this package
imports them all.
"""
from ._task import SCALES, Task, check_params, make, names, register_task
from . import toy_atoms  # noqa: F401  (registers "toy_atoms")

__all__ = ["SCALES", "Task", "check_params", "make", "names", "register_task"]
