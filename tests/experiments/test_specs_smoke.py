"""Every project spec runs end to end at the smoke scale (tune, run, report, figures), so no spec
can rot; and every committed report is rebuilt byte for byte from its committed records."""
import re
from pathlib import Path

import pytest

from hebbnets.experiments import RecordStore, build_report, reproduce
from hebbnets.experiments.specs import PROJECT

ROOT = Path(__file__).resolve().parents[2]


def test_every_spec_runs_end_to_end_at_smoke_scale(tmp_path):
    for spec in PROJECT:
        [path] = reproduce(spec.name, ["tune", "run", "report"], scale="smoke", out=tmp_path, log=None)
        text = path.read_text()
        assert path.name == f"{spec.name}_smoke.md" and text.startswith(f"# {spec.title}")
        assert not re.search(r"\bnan\b", text), spec.name
        for link in re.findall(r"\]\(([^)]+\.png)\)", text):  # every linked figure was drawn
            assert (path.parent / link).read_bytes()[:4] == b"\x89PNG", link
        entries = RecordStore(tmp_path / "records" / f"{spec.name}.jsonl").entries()
        planned = {(b.name, v.label) for b in spec.benches for v in b.variants} | {(m.name, m.name) for m in spec.measures}
        done = {(s["bench"], s["label"]) for e in entries for s in e["slots"] if s.get("stage") != "tune"}
        assert planned <= done, sorted(planned - done)


@pytest.mark.parametrize("spec", PROJECT, ids=lambda s: s.name)
def test_committed_report_is_rebuilt_byte_for_byte_from_committed_records(spec, tmp_path):
    committed = ROOT / "reports" / f"{spec.name}.md"
    store = RecordStore(ROOT / "records" / f"{spec.name}.jsonl")
    assert committed.exists() and store.path.exists(), "every project spec has a committed report and records"
    rebuilt = build_report(spec, store, tmp_path, figures=False, records_name=f"records/{spec.name}.jsonl")
    assert rebuilt.read_bytes() == committed.read_bytes()
