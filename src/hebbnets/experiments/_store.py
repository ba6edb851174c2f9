"""``RecordStore``: one JSON-lines file of experiment records, keyed, replace-not-duplicate,
crash-safe.

Each line is one *entry*: the complete result of one unit of work (one fit of one model on one
task with one seed under one protocol, one tuning point, or one speed measurement), written as
compact JSON with sorted keys. Every entry has a ``key`` (``fit_key`` or ``measure_key``): the
hash of exactly what determines the result. Writing an entry whose key exists replaces it.

Crash safety (a process may be killed with ``kill -9`` at any instant):

* a *new* key is appended as one line, then flushed and ``fsync``-ed before ``put`` returns;
  a write cut short leaves at most one torn last line (no trailing newline, or not JSON), which
  every reader ignores and the next writer truncates before appending (the recovery rule);
* an *existing* key is replaced by rewriting the whole file to a temporary file in the same
  folder, ``fsync``, then ``os.replace`` (atomic on POSIX): the file is either the old or the
  new version, never a mix.

So a finished fit is on disk before the next one starts, and a run killed at any moment and
started again with the same arguments finds every finished fit. Writers of one file serialise
through an advisory lock (``fcntl.flock`` on ``.NAME.lock`` beside the file).
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import math
import os
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

#: config fields that change how a fit is displayed, not what it computes (left out of keys)
COSMETIC_CONFIG_KEYS = frozenset({"progress"})


def jsonable(value: Any) -> Any:
    """Tuples -> lists, tensors/arrays -> lists, non-finite floats -> None, dict keys -> str,
    recursively: the canonical form every record and key is built from."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _digest(parts: Any) -> str:
    text = json.dumps(jsonable(parts), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def neutral_values(model: str) -> dict[str, Any]:
    """``{field: value}`` of ``model``'s config fields that were added after records existed,
    each with the value that computes exactly what fits did before the field was there
    (``dataclasses.field(metadata={"neutral": value})``). Unknown models have none."""
    from .. import models

    if model not in models.names():
        return {}
    return {f.name: jsonable(f.metadata["neutral"]) for f in dataclasses.fields(models.get(model).Config)
            if "neutral" in f.metadata}


def canonical_config(model: str, config: dict[str, Any]) -> dict[str, Any]:
    """The part of a config that a key hashes: cosmetic keys (``progress``) and fields at their
    neutral value (``neutral_values``) left out, so adding a config field whose value reproduces
    the old computation invalidates no record, while any other value (or a new default that is
    not neutral) gives a new key."""
    neutral = neutral_values(model)
    return {k: v for k, v in jsonable(config).items()
            if k not in COSMETIC_CONFIG_KEYS and not (k in neutral and v == neutral[k])}


def fit_key(task: str, task_params: dict[str, Any], model: str, config: dict[str, Any], seed: int,
            protocol: str, options: dict[str, Any] | None = None) -> str:
    """Key of one fit: a hash of the task name and its full generator parameters, the model
    name and its config (``canonical_config``: cosmetic keys and fields at their neutral value
    left out), the seed, and the protocol with its options. Equal inputs give equal keys on
    every machine."""
    config = canonical_config(model, config)
    return _digest(["fit", task, task_params, model, config, seed, protocol, options or {}])


def measure_key(function: str, params: dict[str, Any]) -> str:
    """Key of one measurement (``hebbnets.measures.speed``): the function name and its parameters."""
    return _digest(["measure", function, params])


@lru_cache(maxsize=1)
def _package_dir() -> Path:
    return Path(__file__).resolve().parents[1]


def provenance() -> dict[str, Any]:
    """``{"commit": HEAD or None, "dirty": bool or None}`` of the checkout that holds this
    package. ``dirty`` is true when any file of the package (``src/hebbnets``, the task configs
    included) differs from HEAD or is untracked and not ignored: a result computed then cannot
    be reproduced from the commit alone. ``None`` outside a git checkout."""
    where = _package_dir()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True,
                              timeout=20, check=False)
        if head.returncode != 0 or not head.stdout.strip():
            return {"commit": None, "dirty": None}
        status = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=where, capture_output=True,
                                text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return {"commit": head.stdout.strip(), "dirty": dirty}


def dumps(entry: dict[str, Any]) -> str:
    """One entry as one compact, key-sorted JSON line (no newline)."""
    return json.dumps(jsonable(entry), sort_keys=True, separators=(",", ":"), allow_nan=False)


class RecordStore:
    """A keyed JSON-lines file of entries (see the module docstring).

    Args:
        path: the ``.jsonl`` file; created (with its folder) at the first ``put``.

    ``store[key]`` / ``key in store`` / ``len(store)`` / ``store.entries()`` read the file as it
    is on disk now (the last entry of a key wins; a torn last line is ignored).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if self.path.suffix != ".jsonl":
            raise ValueError(f"path: a record store is a .jsonl file, got {str(self.path)!r}")

    # -- reading -------------------------------------------------------------------------------
    def _read(self) -> tuple[dict[str, dict[str, Any]], int | None]:
        """Entries by key (file order) and the byte offset of a torn last line (None: clean)."""
        if not self.path.exists():
            return {}, None
        raw = self.path.read_bytes()
        out: dict[str, dict[str, Any]] = {}
        torn = None
        offset = 0
        lines = raw.split(b"\n")
        for i, line in enumerate(lines):
            start = offset
            offset += len(line) + 1
            last = i == len(lines) - 1
            if last and not line:
                break  # the file ends with a newline
            try:
                entry = json.loads(line)
                if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
                    raise ValueError
            except ValueError:
                if last:  # killed while appending: the recovery rule drops it
                    torn = start
                    break
                raise ValueError(f"path: line {i + 1} of {self.path} is not a record entry") from None
            out.pop(entry["key"], None)
            out[entry["key"]] = entry
        return out, torn

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, in file order."""
        return list(self._read()[0].values())

    def keys(self) -> list[str]:
        return list(self._read()[0])

    def __contains__(self, key: str) -> bool:
        return key in self._read()[0]

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._read()[0][key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._read()[0].get(key, default)

    def __len__(self) -> int:
        return len(self._read()[0])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.entries())

    # -- writing -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{self.path.name}.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def put(self, entry: dict[str, Any]) -> None:
        """Write one entry (replacing an entry with the same ``key``); durable on return."""
        self.put_many([entry])

    def put_many(self, entries: Iterable[dict[str, Any]],
                 others: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None) -> None:
        """Write several entries under one lock; durable on return.

        ``others(entry)``, if given, is applied to every stored entry whose key is not being
        written and returns it (unchanged or edited) or ``None`` to drop it. When nothing but new
        keys is written, they are appended; otherwise the file is rewritten once, atomically.
        """
        entries = list(entries)
        for e in entries:
            if not isinstance(e, dict) or not isinstance(e.get("key"), str) or not e["key"]:
                raise ValueError("entry: expected a dict with a non-empty string 'key'")
        lines = {e["key"]: dumps(e) for e in entries}
        with self._locked():
            current, torn = self._read()
            merged: dict[str, str] = {}
            rewrite = False
            for key, entry in current.items():
                if key in lines:
                    merged[key] = lines[key]  # replaced in place
                    rewrite = True
                    continue
                kept = entry if others is None else others(entry)
                if kept is None:
                    rewrite = True
                    continue
                line = dumps(kept)
                rewrite = rewrite or kept != entry
                merged[key] = line
            if rewrite:
                for key, line in lines.items():
                    merged.setdefault(key, line)
                self._rewrite(merged.values())
                return
            with open(self.path, "ab") as fh:
                if torn is not None:
                    fh.truncate(torn)  # the recovery rule: drop the torn last line first
                elif fh.tell() > 0 and not self.path.read_bytes().endswith(b"\n"):
                    fh.write(b"\n")  # a complete last entry saved without its newline
                fh.write("".join(line + "\n" for line in lines.values()).encode())
                fh.flush()
                os.fsync(fh.fileno())

    def rewrite(self, entries: Iterable[dict[str, Any]]) -> None:
        """Replace the whole file by ``entries`` (atomically), e.g. to drop stale entries."""
        with self._locked():
            self._rewrite(dumps(e) for e in entries)

    def _rewrite(self, lines: Iterable[str]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            fh.write("".join(line + "\n" for line in lines).encode())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def __repr__(self) -> str:
        return f"RecordStore({str(self.path)!r})"
