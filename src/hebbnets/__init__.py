"""hebbnets: Vector Networks and Resonant Sparse Geometry Networks for PyTorch.

    import hebbnets as hn
    task = hn.tasks.make("toy_atoms", seed=0)
    model = hn.models.make("vn", seed=0, task=task).fit(task.train)
    print(model.score(task.tests["ood"]))
"""
from ._version import __version__
from ._split import Split
from ._model import DataSpec, Model, set_threads
from . import metrics, models, training
from . import vn, baselines, rsgn  # noqa: F401  (register "vn", "mlp", "rsgn", ...)
from . import tasks
from . import continual, entanglement
from . import controls  # noqa: F401  (register the same-structure controls: matrix_code_ff, vn_matrix_implicit, applied_set_code_ff, applied_set_implicit)
from . import bench
from . import experiments

__all__ = ["DataSpec", "Model", "Split", "baselines", "bench", "continual", "controls", "entanglement", "experiments", "metrics",
           "models", "rsgn", "set_threads", "tasks", "training", "vn", "__version__"]
