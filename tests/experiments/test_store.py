import json
import os

import pytest

from hebbnets.experiments import RecordStore, fit_key, jsonable, measure_key, provenance


def _entry(key, **extra):
    return {"key": key, "kind": "fit", **extra}


def test_put_appends_new_keys_and_replaces_existing_ones_in_place(tmp_path):
    store = RecordStore(tmp_path / "r.jsonl")
    assert len(store) == 0 and store.entries() == []
    store.put(_entry("a", v=1))
    store.put_many([_entry("b", v=2), _entry("c", v=3)])
    assert store.keys() == ["a", "b", "c"]
    store.put(_entry("b", v=20))  # replaced, not duplicated, and it keeps its place
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[1])["v"] == 20
    assert store["b"]["v"] == 20 and "z" not in store and store.get("z") is None
    # compact, key-sorted JSON, one entry a line
    assert lines[0] == '{"key":"a","kind":"fit","v":1}'


def test_a_torn_last_line_is_ignored_and_dropped_by_the_next_write(tmp_path):
    path = tmp_path / "r.jsonl"
    store = RecordStore(path)
    store.put_many([_entry("a"), _entry("b")])
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"key":"c","kind":"fi')  # a process killed while appending
    assert store.keys() == ["a", "b"]
    store.put(_entry("d"))
    assert path.read_bytes() == whole + b'{"key":"d","kind":"fit"}\n'
    # a complete last line without its newline is an entry, and the next append adds the newline
    path.write_bytes(path.read_bytes() + b'{"key":"e","kind":"fit"}')
    assert store.keys() == ["a", "b", "d", "e"]
    store.put(_entry("f"))
    assert store.keys() == ["a", "b", "d", "e", "f"] and path.read_bytes().endswith(b"}\n")


def test_a_broken_line_inside_the_file_is_an_error_naming_it(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"key":"a","kind":"fit"}\nnot json\n{"key":"b","kind":"fit"}\n')
    with pytest.raises(ValueError, match="line 2"):
        RecordStore(path).entries()


def test_others_hook_edits_or_drops_entries_in_one_atomic_rewrite(tmp_path):
    store = RecordStore(tmp_path / "r.jsonl")
    store.put_many([_entry("a", slots=[1]), _entry("b", slots=[2])])
    store.put_many([_entry("c", slots=[2])], others=lambda e: None if e["slots"] == [2] else e)
    assert store.keys() == ["a", "c"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("bad", [{"kind": "fit"}, {"key": ""}, {"key": 3}, "x"])
def test_bad_entries_and_paths_are_refused(tmp_path, bad):
    with pytest.raises(ValueError, match="entry"):
        RecordStore(tmp_path / "r.jsonl").put(bad)
    with pytest.raises(ValueError, match="path"):
        RecordStore(tmp_path / "r.json")


def test_keys_hash_what_determines_a_result_and_nothing_else():
    base = dict(task="t", task_params={"n": 1, "held_out": (3, 4)}, model="mlp", config={"lr": 1e-3, "progress": True},
                seed=0, protocol="fit", options={})
    k = fit_key(**base)
    assert k == fit_key(**{**base, "config": {"progress": False, "lr": 1e-3}})  # cosmetic key, key order
    assert k == fit_key(**{**base, "task_params": {"held_out": [3, 4], "n": 1}})  # tuple == list in JSON
    for change in (dict(seed=1), dict(model="vn"), dict(protocol="tune"), dict(options={"curve": True}),
                   dict(config={"lr": 1e-2}), dict(task_params={"n": 2, "held_out": [3, 4]})):
        assert fit_key(**{**base, **change}) != k
    assert measure_key("f", {"a": 1}) != measure_key("f", {"a": 2}) and len(k) == 24


def test_a_field_added_at_its_neutral_value_keeps_old_keys_and_any_other_value_changes_them():
    """Records written before a config field existed stay valid when the field is at the value
    that computes what those fits computed (``metadata={"neutral": ...}``), and only then."""
    from hebbnets.experiments import canonical_config, neutral_values

    old = dict(task="t", task_params={}, model="mlp", config={"lr": 1e-3}, seed=0, protocol="fit")
    assert neutral_values("mlp") == {"ewc_lambda": 0.0, "ewc_samples": 1024, "compile": False}
    k = fit_key(**old)
    assert fit_key(**{**old, "config": {"lr": 1e-3, "ewc_lambda": 0.0, "ewc_samples": 1024}}) == k
    assert fit_key(**{**old, "config": {"lr": 1e-3, "ewc_lambda": 1.0}}) != k
    # a new field whose default changes fits is not neutral at its default: VN's early stopping
    vn = {**old, "model": "vn"}
    assert neutral_values("vn")["val_fraction"] == 0.0
    assert fit_key(**{**vn, "config": {"lr": 1e-3, "val_fraction": 0.1}}) != fit_key(**vn)
    assert fit_key(**{**vn, "config": {"lr": 1e-3, "val_fraction": 0.0}}) == fit_key(**vn)
    assert canonical_config("nosuchmodel", {"a": 1, "progress": True}) == {"a": 1}


def test_jsonable_and_provenance():
    import torch

    assert jsonable({"a": (1, torch.tensor([2.0])), 3: float("nan")}) == {"a": [1, [2.0]], "3": None}
    p = provenance()
    assert set(p) == {"commit", "dirty"}
    if p["commit"] is not None:  # a git checkout (the repository's CI is one)
        assert len(p["commit"]) == 40 and isinstance(p["dirty"], bool)


def test_concurrent_writers_do_not_lose_entries(tmp_path):
    """Two processes appending to one store serialise through the lock: every entry lands."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_write_many, args=(str(tmp_path / "r.jsonl"), w)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert sorted(RecordStore(tmp_path / "r.jsonl").keys()) == sorted(f"{w}-{i}" for w in range(2) for i in range(30))


def _write_many(path, worker):
    store = RecordStore(path)
    for i in range(30):
        store.put(_entry(f"{worker}-{i}", pid=os.getpid()))
