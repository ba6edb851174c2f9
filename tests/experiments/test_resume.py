"""A run killed with kill -9 at an arbitrary moment and started again with the same arguments
recomputes no finished fit; a changed config recomputes only the fits it changes (issue 14, item 3).
Real subprocesses, real SIGKILL."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import hebbnets as hn
from hebbnets.experiments import RecordStore, get_spec, jsonable, plan_spec

ROOT = Path(__file__).resolve().parents[2]
TOTAL = 8  # tests/experiments/slow_spec.py: 2 models x 4 seeds


def _cmd(out):
    return [sys.executable, "-m", "hebbnets.cli", "--threads", "1", "reproduce", "slowtoy", "--scale", "smoke",
            "--stage", "run", "--out", str(out)]


def _env():
    env = dict(os.environ, HEBBNETS_SPEC_MODULES="tests.experiments.slow_spec", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return env


def _entries(out):
    return {e["key"]: e for e in RecordStore(out / "records" / "slowtoy.jsonl").entries()}


def _run_and_kill(out, ready):
    """Start the run, SIGKILL it as soon as ``ready(entries on disk)``; return the entries then."""
    proc = subprocess.Popen(_cmd(out), env=_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = out / "records" / "slowtoy.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:
        if store.exists() and ready(list(_entries(out).values())):
            break
        assert proc.poll() is None, "the run ended before it could be killed"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return _entries(out)


def _run(out):
    done = subprocess.run(_cmd(out), env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def _ran(stderr):
    line = next(x for x in stderr.splitlines() if "job(s):" in x and "to run" in x)
    return int(line.split(",")[1].split()[0])  # "8 job(s): 3 already in ..., 5 to run (local)"


def test_killed_run_resumes_without_recomputing_and_a_changed_config_recomputes_only_its_fits(tmp_path):
    before = _run_and_kill(tmp_path, lambda es: len(es) >= 3)
    assert 3 <= len(before) < TOTAL
    err = _run(tmp_path)
    assert _ran(err) == TOTAL - len(before)
    after = _entries(tmp_path)
    assert len(after) == TOTAL
    for key, entry in before.items():  # finished fits untouched, byte for byte
        assert json.dumps(after[key], sort_keys=True) == json.dumps(entry, sort_keys=True)
    import tests.experiments.slow_spec  # noqa: F401  (registers slowtoy here too)

    planned = {j.key for j in plan_spec(get_spec("slowtoy"), "smoke")}
    assert planned == set(after)  # nothing left to do

    # change the MLP's configuration (a tuned configs file under --out), kill again mid-way
    configs = tmp_path / "configs" / "smoke"
    configs.mkdir(parents=True)
    chosen = jsonable(hn.tasks.make("toy_atoms").model_configs)
    chosen["mlp"]["lr"] = 0.01
    (configs / "toy_atoms.json").write_text(json.dumps(
        {"task": "toy_atoms", "models": {m: {"config": c} for m, c in chosen.items()}}))
    vn_keys = {k for k, e in after.items() if e["model"] == "vn"}
    killed = _run_and_kill(tmp_path, lambda es: any(e["model"] == "mlp" and e["config"]["lr"] == 0.01 for e in es))
    new_mlp = {k for k, e in killed.items() if e["model"] == "mlp" and e["config"]["lr"] == 0.01}
    assert 1 <= len(new_mlp) < 4
    err = _run(tmp_path)
    assert _ran(err) == 4 - len(new_mlp)  # only the MLP fits, only those not finished before the kill
    final = _entries(tmp_path)
    assert len(final) == TOTAL and vn_keys <= set(final)  # the VN fits were never recomputed
    assert all(final[k] == after[k] for k in vn_keys)
    assert all(e["config"]["lr"] == 0.01 for e in final.values() if e["model"] == "mlp")
    slots = [(s["bench"], s["label"], s["seed"]) for e in final.values() for s in e["slots"]]
    assert len(slots) == len(set(slots)) == TOTAL  # each slot answered by exactly one entry
