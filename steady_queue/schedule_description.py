"""Cron schedules in words for people: "every day at 12:00", "every 5 minutes".

Common shapes get a sentence; anything else is shown as the expression itself.
"""

from __future__ import annotations

import calendar
import re

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]


def describe(schedule: str) -> str:
    """Return ``schedule`` in words, or the expression itself when it has no simple reading."""
    fields = ALIASES.get(schedule.strip().lower(), schedule).split()
    if len(fields) == 6 and fields[:5] == ["*"] * 5:
        return _every(fields[5], "second") or schedule
    if len(fields) == 6 and fields[5].isdigit():
        # croniter's sixth field is the second (last): describe the minute, then the second.
        words = describe(" ".join(fields[:5]))
        if words == " ".join(fields[:5]):
            return schedule
        second = int(fields[5])
        if second and re.search(r"\d\d:\d\d$", words):
            return f"{words}:{second:02d}"
        return words if second == 0 else f"{words}, at second {second}"
    if len(fields) != 5:
        return schedule
    minute, hour, day, month, weekday = fields
    if hour == "*" and (day, month, weekday) == ("*", "*", "*"):
        if minute.isdigit():
            return f"every hour at minute {minute}"
        return _every(minute, "minute") or schedule
    if minute.isdigit() and hour.isdigit():
        days = _days(day, month, weekday)
        return f"{days} at {int(hour):02d}:{int(minute):02d}" if days else schedule
    return schedule


def _every(field: str, unit: str) -> str | None:
    if field == "*":
        return f"every {unit}"
    if field.startswith("*/") and field[2:].isdigit():
        return f"every {field[2:]} {unit}s"
    return None


def _days(day: str, month: str, weekday: str) -> str | None:
    if (day, month, weekday) == ("*", "*", "*"):
        return "every day"
    if (day, month) == ("*", "*"):
        return _weekdays(weekday)
    if weekday != "*" or not day.isdigit():
        return None
    if month == "*":
        return f"every month on day {day}"
    if month.isdigit() and 1 <= int(month) <= 12:
        return f"every year on {calendar.month_name[int(month)]} {day}"
    return None


def _weekdays(weekday: str) -> str | None:
    if weekday == "1-5":
        return "every weekday"
    names = weekday.split(",")
    if all(name.isdigit() and int(name) <= 7 for name in names):
        return "every " + " and ".join(WEEKDAYS[int(name) % 7] for name in names)
    return None
