"""Masking a job's log lines: its masked argument values, and values after masked names."""

from __future__ import annotations

from steady_queue import arguments
from steady_queue_dashboard.log_masking import log_masker
from steady_queue_dashboard.masking import MASK


def masker(*args, **kwargs):
    return log_masker("tests.tasks.logging_tasks.chatty", arguments.serialize(list(args), kwargs))


def test_a_masked_keywords_value_is_masked_wherever_it_appears():
    mask = masker(password="s3cret-value", user="ada")

    assert mask("user ada, secret s3cret-value.") == f"user ada, secret {MASK}."


def test_nested_masked_keys_are_masked():
    mask = masker(request={"headers": {"Authorization": "Bearer abc123"}, "path": "/x"})

    assert mask("sent Bearer abc123 to /x") == f"sent {MASK} to /x"


def test_values_after_masked_names_are_masked_quoted_or_not():
    mask = masker()

    assert mask("password=hunter2 next") == f"password={MASK} next"
    assert mask('{"api_token": "a b c", "n": 1}') == f'{{"api_token": {MASK}, "n": 1}}'
    assert mask("Secret: xyz; ok") == f"Secret: {MASK}; ok"


def test_short_values_are_not_masked_everywhere():
    mask = masker(password="ab")

    assert mask("a cab") == "a cab"
