"""Build reports: report.json and a self-contained report.html next to every build."""
from .report import build_report, write_report

__all__ = ["build_report", "write_report"]
