"""Custom tools over a small SQLite register built from company.sql on first use."""

import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

from stepgraph import tool

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


@tool
def find_company(name: str) -> dict[str, Any]:
    """Look up a company by its exact name and return its id, name and country.

    Args:
        name: The registered company name.
    """
    with _connect() as db:
        row = db.execute("SELECT id, name, country FROM company WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = [r["name"] for r in db.execute("SELECT name FROM company ORDER BY name")]
            raise LookupError(f"no company named {name!r}; registered: {', '.join(known)}")
    return dict(row)


@tool
def list_shareholders(company_id: int) -> dict[str, Any]:
    """List a company's shareholders by company id, largest first, with the total held.

    Args:
        company_id: The id returned by find_company.
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
