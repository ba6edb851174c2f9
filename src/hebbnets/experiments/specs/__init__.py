"""The project's experiment specs, one module per report; importing this package registers
them. A new report is a new module here (and one import line below)."""
from . import toy  # noqa: F401
from . import rsgn  # noqa: F401
from . import vn_benchmarks  # noqa: F401
from . import speed  # noqa: F401
