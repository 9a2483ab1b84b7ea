"""What the machine is and what it spends: cores, load, versions, CPU time of processes."""

from __future__ import annotations

import os
import platform
import sqlite3
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import django
from django.db import connection

TICKS = os.sysconf("SC_CLK_TCK")


def description() -> str:
    """One line naming the machine, the database server and the library versions."""
    return (
        f"{os.cpu_count()} cores, {_database()}, Python {platform.python_version()}, "
        f"Django {django.get_version()}, django-tasks-db {version('django-tasks-db')}"
        f"{_dj_queue()}"
    )


def _dj_queue() -> str:
    try:
        return f", dj-queue {version('dj-queue')}"
    except PackageNotFoundError:
        return ""


def load() -> float:
    """The one-minute load average."""
    return os.getloadavg()[0]


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU time of ``pids`` so far (processes that are gone count 0)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def server_pids() -> list[int]:
    """The database server processes serving the benchmark's connections (PostgreSQL only).

    MySQL/MariaDB serve connections with threads of one process and SQLite runs in the
    client, so their work shows in the clients' own CPU time or not at all.
    """
    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return [row[0] for row in cursor.fetchall()]


def _database() -> str:
    if connection.vendor == "sqlite":
        return f"SQLite {sqlite3.sqlite_version}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        server = cursor.fetchone()[0]
    if connection.vendor == "postgresql":
        return " ".join(server.split()[:2])
    return f"MySQL/MariaDB {server}"
