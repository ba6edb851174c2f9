"""A small spec whose fits take a fixed minimum time, so a test can kill its run mid-way.

Loaded by subprocesses through ``HEBBNETS_SPEC_MODULES=tests.experiments.slow_spec``."""
import os
import time

from hebbnets.experiments import Bench, Scale, Spec, get_protocol, register_protocol, register_spec


@register_protocol("slow_fit")
def slow_fit(ctx):
    time.sleep(float(os.environ.get("SLOW_FIT_SECONDS", "0.15")))
    return get_protocol("fit")(ctx)


SEEDS = (0, 1, 2, 3)
SPEC = register_spec(Spec("slowtoy", "slow toy (tests only)", benches=(
    Bench("toy", task="toy_atoms", models=("vn", "mlp"), seeds=SEEDS, protocol="slow_fit",
          scales={"smoke": Scale(params=dict(n_train=60, n_test=20), seeds=SEEDS,
                                 config={"*": {"epochs": 1}, "mlp": {"hidden": (8,)}, "vn": {"max_iter": 20}})}),
)))
