"""The project's experiment specs, one module per report; importing this package registers
them. A new report is a new module here, imported below and listed in ``PROJECT`` (CI runs
every spec of ``PROJECT`` at the smoke scale, and checks that each committed report is rebuilt
byte for byte from its committed records)."""
from . import rsgn, speed, toy, vn_benchmarks, vn_claims, vn_dynamics

#: the specs behind the committed reports (reports/NAME.md, records/NAME.jsonl)
PROJECT = (toy.SPEC, vn_benchmarks.SPEC, vn_dynamics.SPEC, vn_claims.SPEC, rsgn.SPEC, speed.SPEC)
