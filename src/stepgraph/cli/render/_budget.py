"""A run's budget as people read it: usage against each limit."""

from __future__ import annotations

from rich.table import Table

from stepgraph.engine import BUDGET_LABELS
from stepgraph.model import BudgetReport


def _amount(name: str, value: float | None, missing: str) -> str:
    if value is None:
        return missing
    if name == "cost":
        return f"${value:.6f}".rstrip("0").rstrip(".")
    return f"{value:g}"


def budget_table(report: BudgetReport) -> Table:
    """Usage against each limit: one row per kind of use, the limit or '-' for none."""
    table = Table(title="Budget", title_justify="left")
    for column in ("", "used", "limit"):
        table.add_column(column)
    used = report.used.model_dump()
    limits = report.limits.limits()
    for name, label in BUDGET_LABELS.items():
        row = _amount(name, used[name], "unknown"), _amount(name, limits.get(name), "-")
        table.add_row(label, *row)
    return table


def has_limits(report: BudgetReport | None) -> bool:
    """True when the run had at least one limit (else the table is only noise)."""
    return report is not None and bool(report.limits.limits())
