"""Recurring task keys and queue names ending like an action ("/run", "/pause") still
reach their detail pages, and the action paths still act (issue 10, defect 5)."""

from __future__ import annotations

import pytest

from steady_queue.models import Pause, RecurringTask

from .page_forms import url

pytestmark = pytest.mark.django_db


def test_detail_pages_whose_key_ends_like_an_action(admin_client, db):
    for key in ("nightly/run", "a/enable", "b/disable"):
        RecurringTask.objects.create(
            key=key, schedule="0 * * * *", task_path="tests.tasks.dashboard.record", static=False
        )
        response = admin_client.get(url("recurring-detail", key))
        assert response.status_code == 200 and key in response.content.decode()
    for name in ("mail/pause", "mail/resume"):
        Pause.objects.create(queue_name=name)
        response = admin_client.get(url("queue-detail", name))
        assert response.status_code == 200 and name in response.content.decode()
    assert RecurringTask.objects.get(key="nightly/run").enabled
    admin_client.post(url("queue-pause", "mail"))
    assert set(Pause.objects.values_list("queue_name", flat=True)) == {
        "mail",
        "mail/pause",
        "mail/resume",
    }
