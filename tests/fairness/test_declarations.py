"""Declaring fair share: clear errors at decoration, keys computed at enqueue."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import User

from steady_queue.backend import enqueue_all
from steady_queue.compat import task
from steady_queue.exceptions import FairnessKeyError
from steady_queue.fairness import fair, in_use
from steady_queue.models import Job, ReadyExecution
from steady_queue.task_options.fairness import READABLE_LENGTH, fairness_for
from tests.tasks import features

pytestmark = pytest.mark.django_db(transaction=True)


def test_fair_goes_above_task():
    with pytest.raises(TypeError, match=r"@fair\(...\) goes above @task\(\)"):

        @task()
        @fair(key=lambda n: n)
        def below(n) -> None: ...


@pytest.mark.parametrize("key", [None, "tenant", 3])
def test_a_key_must_be_a_function(key):
    with pytest.raises(TypeError, match=r"Fairness\(key=...\) must be a function"):
        fair(key=key)


@pytest.mark.parametrize(
    ("weight", "error"),
    [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError)],
)
def test_a_weight_must_be_a_positive_whole_number(weight, error):
    with pytest.raises(error, match=r"Fairness\(weight=...\) must be"):
        fair(key=lambda n: n, weight=weight)


def test_task_keyword_takes_only_a_fairness():
    with pytest.raises(TypeError, match=r"fairness=...\) takes a Fairness"):

        @task(fairness={"key": "tenant"})
        def wrong() -> None: ...


@pytest.mark.skipif(not features.TASK_TAKES_OPTIONS, reason="@task(**options) is Django 6.1+")
def test_task_keyword_declares_fair_share(fair_share):
    declared = fairness_for(fair_share.declared_in_task.module_path)
    assert declared.weight_for("x", "acme") == 3
    result = fair_share.declared_in_task.enqueue("acme")
    assert Job.objects.get(pk=int(result.id)).fairness_key == "acme"


def test_fair_share_is_in_use_only_with_fair_tasks(fair_share):
    assert in_use()


def test_fair_share_is_not_in_use_without_fair_tasks():
    assert not in_use()


def test_a_key_is_computed_at_enqueue_and_copied_to_the_ready_row(fair_share):
    result = fair_share.by_tenant.enqueue("acme", n=1)

    job = Job.objects.get(pk=int(result.id))
    assert job.fairness_key == "acme"
    assert ReadyExecution.objects.get(job=job).fairness_key == "acme"


def test_a_model_instance_keys_by_model_and_primary_key(fair_share):
    user = User.objects.create(username="tenant")

    result = fair_share.per_account.enqueue(user)

    assert Job.objects.get(pk=int(result.id)).fairness_key == f"auth.user:{user.pk}"


def test_a_long_key_is_kept_as_its_digest(fair_share):
    result = fair_share.by_tenant.enqueue("x" * (READABLE_LENGTH + 1))

    key = Job.objects.get(pk=int(result.id)).fairness_key
    assert key.startswith("sha256:") and len(key) == 71


def test_a_key_function_that_raises_writes_nothing_and_names_the_task(fair_share):
    with pytest.raises(FairnessKeyError, match=r"tests\.tasks\.fair\.key_may_fail") as info:
        fair_share.key_may_fail.enqueue("bad")
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(FairnessKeyError):
        enqueue_all(
            [(fair_share.key_may_fail, ("good",), {}), (fair_share.key_may_fail, ("bad",), {})]
        )

    assert not Job.objects.exists()
    assert not ReadyExecution.objects.exists()


def test_a_weight_function_that_raises_weighs_1_and_logs_a_warning(fair_share, caplog):
    enqueue_all([(fair_share.weighted, ("heavy",), {"n": n}) for n in range(2)])
    with caplog.at_level(logging.WARNING, logger="steady_queue.fairness"):
        enqueue_all([(fair_share.weighted, ("broken",), {"n": n}) for n in range(2)])

    (record,) = caplog.records
    assert "tests.tasks.fair.weighted" in record.getMessage()
    assert "'broken'" in record.getMessage()
    broken = sorted(
        ReadyExecution.objects.filter(fairness_key="broken").values_list("fair_order", flat=True)
    )
    heavy = sorted(
        ReadyExecution.objects.filter(fairness_key="heavy").values_list("fair_order", flat=True)
    )
    assert broken[1] - broken[0] == pytest.approx(1)  # weight 1: one step apart
    assert heavy[1] - heavy[0] == pytest.approx(1 / 4)
