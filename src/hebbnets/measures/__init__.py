"""Measurements and table maths under the experiments pipeline: ``speed`` (the registered speed
and scaling measurements the ``speed`` and ``rsgn`` specs record) and ``summary`` (per-split
means, sample standard deviations, OOD/ID ratios, ratios to the best baseline). The benchmark
front ends (``hebbnets.bench``) and the experiments pipeline both build on them; they import
neither."""
