"""Custom tools over a small SQLite register built from company.sql on first use."""

import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

from stepgraph import Verdict, VerdictKind, tool

_SQL = Path(__file__).with_name("company.sql")
_lock = threading.Lock()
_db_path: Path | None = None


def _connect() -> sqlite3.Connection:
    global _db_path
    with _lock:
        if _db_path is None:
            path = Path(tempfile.mkdtemp(prefix="stepgraph-company-")) / "register.sqlite"
            with sqlite3.connect(path) as db:
                db.executescript(_SQL.read_text(encoding="utf-8"))
            _db_path = path
    connection = sqlite3.connect(_db_path)
    connection.row_factory = sqlite3.Row
    return connection


def _same_company_by_id(step: str, args: dict[str, Any], value: Any) -> Verdict:
    """Backwards: the id the lookup returned names the company that was asked for."""
    with _connect() as db:
        row = db.execute("SELECT name FROM company WHERE id = ?", (value["id"],)).fetchone()
    found = row["name"] if row else None
    return Verdict(
        kind=VerdictKind.REVERSE,
        step=step,
        passed=found == args["name"] == value["name"],
        description=f"company id {value['id']} is registered as {found!r}",
        values={"id": str(value["id"]), "name": str(found)},
    )


@tool(reverse=_same_company_by_id)
def find_company(name: str) -> dict[str, Any]:
    """Look up a company by its exact name and return its id, name and country.

    Args:
        name: The registered company name.

    Returns:
        A record with id (an integer), name and country: pass its id on, company.id.
    """
    with _connect() as db:
        row = db.execute("SELECT id, name, country FROM company WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = [r["name"] for r in db.execute("SELECT name FROM company ORDER BY name")]
            raise LookupError(f"no company named {name!r}; registered: {', '.join(known)}")
    return dict(row)


def _holders_add_up(step: str, args: dict[str, Any], value: Any) -> Verdict:
    """Backwards: the largest is the largest of the list, the total and count are the list's."""
    shares = [holder["percent"] for holder in value["holders"]]
    passed = (
        value["largest"]["percent"] == max(shares)
        and abs(value["total_percent"] - sum(shares)) < 1e-9
        and value["count"] == len(shares)
    )
    return Verdict(
        kind=VerdictKind.REVERSE,
        step=step,
        passed=passed,
        description=f"{value['count']} holders: the largest holds {max(shares)}%, "
        f"together {sum(shares):g}%",
        values={"largest": str(max(shares)), "total": f"{sum(shares):g}"},
    )


@tool(reverse=_holders_add_up)
def list_shareholders(company_id: int) -> dict[str, Any]:
    """List a company's shareholders by company id, largest first, with the total held.

    Args:
        company_id: The id returned by find_company.

    Returns:
        A record with count (how many holders), largest (the largest holder, with holder
        and percent), total_percent (all holders together) and holders (a list, largest
        first, each with holder and percent). A plan refers to a field by its path: the
        largest share is largest.percent, the second holder's holders.1.percent.
    """
    with _connect() as db:
        rows = db.execute(
            "SELECT holder, percent FROM shareholder WHERE company_id = ? ORDER BY percent DESC",
            (company_id,),
        ).fetchall()
    if not rows:
        raise LookupError(f"no shareholders recorded for company id {company_id}")
    holders = [dict(row) for row in rows]
    return {
        "count": len(holders),
        "largest": holders[0],
        "total_percent": sum(h["percent"] for h in holders),
        "holders": holders,
    }
