"""The Ray backend: each job is one Ray task (1 CPU, 1 torch thread) running ``run_job``.

``ray.init()`` starts a Ray on this machine unless one is running; ``address`` joins an
existing cluster instead (``ray start --head`` on one node, ``ray start --address=HEAD:6379`` on
the others; every node needs this package at the same commit, ``pip install -e ".[ray]"``).
The driver writes every entry to the store as its task finishes, so a killed driver loses only
the tasks in flight, as with the local backend. Records equal the local backend's for the same
seeds (timings aside) when the local run also uses one thread (``hebbnets --threads 1``).
"""
from __future__ import annotations

from typing import Any, Iterator


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ValueError("backend: 'ray' needs Ray, an optional extra: pip install 'hebbnets[ray]'") from None
    return ray


def _remote_job(payload: dict[str, Any]) -> dict[str, Any]:
    from ._run import run_job

    return run_job(payload)


def run_on_ray(jobs: list[Any], *, address: str | None = None, progress: Any = None) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Submit every job as a Ray task and yield ``(job, entry)`` as each one finishes."""
    if not jobs:
        return
    ray = _import_ray()
    started = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        started = True
    try:
        remote = ray.remote(num_cpus=1)(_remote_job)
        pending = {remote.remote({**job.payload, "threads": 1}): job for job in jobs}
        if progress is not None and progress.log:
            progress.log(f"submitted {len(jobs)} Ray task(s) ({ray.available_resources().get('CPU', 0):.0f} CPUs free)")
        while pending:
            [done], _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(done)
            try:
                entry = ray.get(done)
            except ray.exceptions.RayTaskError as exc:  # the job's own error, e.g. a ValueError
                raise exc.as_instanceof_cause() from None
            if progress is not None:
                progress.current = job.name
                progress.end(job, entry)
            yield job, entry
    finally:
        if started:
            ray.shutdown()
