"""SQLite's files tell of every commit of another connection, and of nothing else.

A real SQLite database in WAL mode (and one in rollback-journal mode), written by a
connection of its own; ``DatabaseFiles`` only stats the files.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from steady_queue.storage.file_changes import DatabaseFiles, for_database


def fine_grained_file_times(directory: Path) -> bool:
    """Whether writes right after a stat() get distinct times here (Linux 6.13+ on ext4...)."""
    probe = directory / "clock-probe"
    probe.write_bytes(b"")
    times = set()
    with probe.open("r+b", buffering=0) as file:
        for _ in range(20):
            file.write(b".")
            file.seek(0)  # same size: only the time may differ
            times.add(os.stat(probe).st_mtime_ns)
    return len(times) == 20


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Callable[[str], sqlite3.Connection]]:
    """A writer on a new database file with a table ``jobs``; closed afterwards."""
    opened: list[sqlite3.Connection] = []

    def open_(journal_mode: str) -> sqlite3.Connection:
        writer = sqlite3.connect(tmp_path / "queue.sqlite3", isolation_level=None)
        opened.append(writer)
        writer.execute(f"PRAGMA journal_mode={journal_mode}")
        writer.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT)")
        return writer

    yield open_
    for writer in opened:
        writer.close()


def test_each_commit_into_a_growing_wal_is_seen_once(tmp_path, database):
    writer = database("WAL")
    files = DatabaseFiles(tmp_path / "queue.sqlite3")

    for index in range(20):  # faster than any clock that stamps the files
        writer.execute("INSERT INTO jobs (name) VALUES (?)", [f"job-{index}"])
        assert files.changed(), index
        assert not files.changed(), index


def test_reads_and_empty_transactions_change_nothing(tmp_path, database):
    writer = database("WAL")
    files = DatabaseFiles(tmp_path / "queue.sqlite3")

    writer.execute("SELECT count(*) FROM jobs").fetchall()
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("SELECT * FROM jobs").fetchall()
    writer.execute("COMMIT")

    assert not files.changed()


@pytest.mark.parametrize("journal_mode", ["WAL", "DELETE"])
def test_commits_that_leave_the_sizes_alone_are_seen_by_their_times(
    tmp_path, database, journal_mode
):
    # After a checkpoint the next writer overwrites the WAL from its start (same size);
    # without a WAL an update rewrites a page of the database file. Only the time
    # changes, and on a coarse clock not between two commits in one tick.
    if not fine_grained_file_times(tmp_path):
        pytest.skip("this kernel stamps files with a coarse clock")
    writer = database(journal_mode)
    for index in range(50):
        writer.execute("INSERT INTO jobs (name) VALUES (?)", [f"job-{index}"])
    writer.execute("PRAGMA wal_checkpoint(RESTART)")
    files = DatabaseFiles(tmp_path / "queue.sqlite3")

    for index in range(20):
        writer.execute("UPDATE jobs SET name = ? WHERE id = 1", [f"name-{index}"])
        assert files.changed(), index


def test_a_database_in_memory_has_no_files():
    assert for_database({"NAME": ":memory:"}) is None
    assert for_database({"NAME": "file:queue?mode=memory&cache=shared"}) is None
