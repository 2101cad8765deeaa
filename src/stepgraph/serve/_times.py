"""Times as people read them on the pages: local, to the second, with the day when it matters."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta


def parsed(ts: str) -> datetime | None:
    """A journal's ISO time (``2025-06-01T12:00:00.123456Z``), or None when it is not one."""
    try:
        stamp = datetime.fromisoformat(ts)
    except (TypeError, ValueError):
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def when(ts: str | None, *, today: date | None = None) -> str:
    """``14:02:07`` today, ``3 Jun 14:02:07`` this year, ``3 Jun 2024 14:02:07`` before.

    In the server's local time zone: the page is served on this machine, to its user.
    Text that is no time is shown as it is.
    """
    stamp = parsed(ts or "")
    if stamp is None:
        return ts or ""
    local = stamp.astimezone()
    today = today or datetime.now().astimezone().date()
    clock = local.strftime("%H:%M:%S")
    if local.date() == today:
        return clock
    day = f"{local.day} {local.strftime('%b')}"
    if local.year == today.year:
        return f"{day} {clock}"
    return f"{day} {local.year} {clock}"


def day_bound(day: str, *, end: bool = False) -> str | None:
    """A local date (``2025-06-01``) as the UTC instant the index compares `started` with.

    The start of that day, or with `end` the start of the next one; None for no date.
    """
    try:
        chosen = date.fromisoformat(day)
    except ValueError:
        return None
    if end:
        chosen += timedelta(days=1)
    local = datetime.combine(chosen, time()).astimezone()
    return local.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
