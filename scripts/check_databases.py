"""Check that the PostgreSQL and MySQL/MariaDB servers the tests use answer a login.

Run with the project's virtualenv (it needs psycopg and mysqlclient):
    .venv/bin/python scripts/check_databases.py
Reads the same SQ_PG_* / SQ_MYSQL_* variables as tests/settings.py. Exits 1, naming
each server that could not be reached, so that CI fails before any test runs.
"""

from __future__ import annotations

import os
import sys


def check_postgres() -> str:
    import psycopg

    with psycopg.connect(
        host=os.environ.get("SQ_PG_HOST", "127.0.0.1"),
        port=int(os.environ.get("SQ_PG_PORT", "5432")),
        user=os.environ.get("SQ_PG_USER", "postgres"),
        password=os.environ.get("SQ_PG_PASSWORD", ""),
        dbname="postgres",
        connect_timeout=5,
    ) as connection:
        return connection.execute("SELECT version()").fetchone()[0]


def check_mysql() -> str:
    import MySQLdb

    connection = MySQLdb.connect(
        host=os.environ.get("SQ_MYSQL_HOST", "127.0.0.1"),
        port=int(os.environ.get("SQ_MYSQL_PORT", "3306")),
        user=os.environ.get("SQ_MYSQL_USER", "root"),
        password=os.environ.get("SQ_MYSQL_PASSWORD", ""),
        connect_timeout=5,
    )
    try:
        cursor = connection.cursor()
        cursor.execute("SELECT VERSION()")
        return cursor.fetchone()[0]
    finally:
        connection.close()


def main() -> int:
    failures = 0
    for name, check in [("PostgreSQL", check_postgres), ("MySQL/MariaDB", check_mysql)]:
        try:
            print(f"{name}: {check()}")
        except Exception as exc:
            failures += 1
            print(f"{name}: UNREACHABLE: {type(exc).__name__}: {exc}", file=sys.stderr)
    if failures:
        print(
            "check_databases: the tests need PostgreSQL on 127.0.0.1:5432 (user postgres, "
            "trust) and MariaDB/MySQL on 127.0.0.1:3306 (root, empty password).",
            file=sys.stderr,
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
