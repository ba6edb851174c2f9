"""The Ray backend gives the same records as the local backend (issue 14, item 6): a local Ray
with 2 CPUs, one torch thread per task on both sides."""
import pytest

from hebbnets.experiments import Bench, RecordStore, Scale, execute, plan_bench

ray = pytest.importorskip("ray", reason="the Ray backend is tested where the 'ray' extra is installed")

TIMINGS = {"fit_seconds", "predict_seconds", "seconds"}


def _comparable(entry):
    stats = {k: v for k, v in entry["stats"].items() if k not in TIMINGS}
    return {**{k: v for k, v in entry.items() if k not in ("stats",)}, "stats": stats}


def test_ray_records_equal_local_records(tmp_path):
    bench = Bench("toy", "toy_atoms", ("vn", "mlp"), seeds=(0, 1),
                  scales={"smoke": Scale(params=dict(n_train=60, n_test=20), seeds=(0, 1),
                                         config={"*": {"epochs": 2}, "mlp": {"hidden": (16,)}, "vn": {"max_iter": 30}})})
    jobs = plan_bench("raytest", bench, "smoke")
    local = execute(jobs, RecordStore(tmp_path / "local.jsonl"), threads=1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        logs = []
        remote = execute(jobs, RecordStore(tmp_path / "ray.jsonl"), backend="ray", log=logs.append)
    finally:
        ray.shutdown()
    assert any("Ray task" in line for line in logs)
    assert [_comparable(e) for e in remote] == [_comparable(e) for e in local]
    assert len(RecordStore(tmp_path / "ray.jsonl")) == 4
    assert all(e["rows"] and e["stats"]["fit_seconds"] > 0 for e in remote)
