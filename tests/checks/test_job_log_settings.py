"""A job_log_* setting of the wrong kind is a clear error at start (manage.py check)."""

from __future__ import annotations

from datetime import timedelta

import pytest

import steady_queue
from steady_queue.checks.job_logs import check_job_log_settings


def test_the_defaults_pass():
    assert check_job_log_settings() == []


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("job_log_level", "INFO", "a logging level (an int) or None"),
        ("job_log_level", -1, "a logging level"),
        ("job_log_print", "yes", "True or False"),
        ("job_log_max_lines", 0, "at least 1"),
        ("job_log_max_bytes", 1.5, "a whole number"),
        ("job_log_flush_interval", timedelta(0), "a positive timedelta"),
        ("job_log_flush_interval", "1s", "a positive timedelta"),
    ],
)
def test_a_setting_of_the_wrong_kind_is_an_error_that_names_it(monkeypatch, name, value, said):
    monkeypatch.setattr(steady_queue, name, value)

    (error,) = check_job_log_settings()

    assert error.id == "steady_queue.E311"
    assert f"steady_queue.{name} is {value!r}" in error.msg
    assert said in error.msg


def test_no_level_and_a_number_of_seconds_pass(monkeypatch):
    monkeypatch.setattr(steady_queue, "job_log_level", None)
    monkeypatch.setattr(steady_queue, "job_log_flush_interval", 0.5)

    assert check_job_log_settings() == []
