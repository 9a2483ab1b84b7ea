"""Durations too long for a date: a usage error (exit 2) or a 400, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.management.base import CommandError
from django.test import Client

from steady_queue.models import Job
from steady_queue.ops.durations import parse_duration
from tests import tasks
from tests.processes.conftest import MANAGE, REPO

from .conftest import health, run_command

HUGE = ["99999999999d", "3000000d", "9" * 30, "9" * 400 + "d", "36501d"]


@pytest.mark.parametrize("text", HUGE)
def test_a_duration_beyond_a_century_is_a_value_error_that_says_so(text):
    with pytest.raises(ValueError, match="too long a duration: give at most 36500d"):
        parse_duration(text)


def test_a_century_is_still_a_duration():
    assert parse_duration("36500d").days == 36_500


@pytest.mark.urls("tests.observability.urls")
@pytest.mark.parametrize("text", HUGE)
def test_the_health_view_answers_400_for_a_huge_max_latency(db, text):
    response = Client().get("/queue/health", {"max_latency": text})
    assert response.status_code == 400
    assert "too long a duration" in response.json()["error"]


@pytest.mark.parametrize("option", ["--max-age", "--max-latency"])
def test_the_health_command_refuses_a_huge_duration_as_a_usage_error(db, option):
    arguments = ["--liveness", "/nonexistent"] if option == "--max-age" else []
    with pytest.raises(CommandError, match=rf"argument {option}: .* too long a duration"):
        health(*arguments, option, "9" * 30)


@pytest.mark.django_db
def test_the_jobs_command_refuses_a_huge_older_than_and_changes_nothing():
    tasks.noop.enqueue()
    for action in ("list", "discard"):
        with pytest.raises(CommandError, match=r"argument --older-than: .* too long a duration"):
            run_command(
                "steady_queue_jobs",
                action,
                "--status",
                "ready",
                "--older-than",
                "3000000d",
                "--yes",
            )
    assert Job.objects.count() == 1


def test_from_a_shell_a_huge_duration_exits_2_with_one_line_and_no_traceback(tmp_path):
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "SQ_TEST_DB": "sqlite"}
    environment["SQ_SQLITE_DIR"] = str(tmp_path)
    finished = subprocess.run(
        [sys.executable, str(MANAGE), "steady_queue_jobs", "list", "--older-than", "3000000d"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 2, finished.stderr
    assert "Traceback" not in finished.stderr
    assert "'3000000d' is too long a duration: give at most 36500d." in finished.stderr
