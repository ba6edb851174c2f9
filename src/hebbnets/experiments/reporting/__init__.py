"""Reports from records alone, in one place: the section builders and ``build_report``
(``sections``), the queries several reports share and the statistics a claim's ratio carries
(``queries``), every figure kind (``figures``), each report's own prose and claim checks (one
``narration_NAME`` module per report), and the one-page scorecard over every report
(``scorecard``). A spec (``experiments/specs``) holds only data and the layout of its sections.
"""
from .sections import (VERDICT_WORDS, Cell, Claim, Custom, Figure, Notes, Point, ReportContext, ResultsTable, Section,
                       Text, TuningTable, Verdict, Verdicts, as_verdict, build_report, capped_fits, figure_kinds, fmt,
                       fmt_pct, ood_id_ratio, ratio_to_best, register_figure, report_pages, stale_fits, table_cell,
                       unrun_line, write_page)
from . import figures  # noqa: F401,E402  (registers the figure kinds)

__all__ = ["VERDICT_WORDS", "Cell", "Claim", "Custom", "Figure", "Notes", "Point", "ReportContext", "ResultsTable",
           "Section", "Text", "TuningTable", "Verdict", "Verdicts", "as_verdict", "build_report", "capped_fits",
           "figure_kinds", "fmt", "fmt_pct", "ood_id_ratio", "ratio_to_best", "register_figure", "report_pages", "stale_fits",
           "table_cell", "write_page", "unrun_line"]
