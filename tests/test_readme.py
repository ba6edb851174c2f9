"""The README's report table quotes each report's recorded compute: the two must agree, so a
rerun that adds records cannot leave a stale figure in the README."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _report_hours(name: str) -> str:
    text = (ROOT / "reports" / f"{name}.md").read_text()
    m = re.search(r"Compute behind these records: ([0-9.]+) h", text)
    assert m, f"reports/{name}.md has no 'Compute behind these records' line"
    return m.group(1)


def test_readme_quotes_every_reports_recorded_compute():
    rows = re.findall(r"^\| \[`reports/(\w+)\.md`\].*?not run in one go: ([0-9.]+) h of recorded", (ROOT / "README.md")
                      .read_text(), flags=re.M)
    assert len(rows) >= 4, "the README's report table lost its 'not run in one go: X h of recorded ...' cells"
    for name, hours in rows:
        assert hours == _report_hours(name), f"README quotes {hours} h for {name}, the report says {_report_hours(name)} h"
