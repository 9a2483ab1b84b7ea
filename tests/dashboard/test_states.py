"""Issue 25's dashboard states: cancelled as its own outcome, huge input, readable pages."""

from __future__ import annotations

import pytest
from django.urls import reverse

from steady_queue.models import Pause
from steady_queue_dashboard.models import AuditEntry

pytestmark = pytest.mark.django_db


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


@pytest.mark.parametrize("length", [256, 5_000])
def test_pausing_a_queue_name_too_long_for_any_queue_answers_400_and_writes_nothing(
    admin_client, length
):
    response = admin_client.post(url("queue-pause", "q" * length))
    assert response.status_code == 400
    assert "queue names are at most 255 characters" in response.content.decode()
    assert not Pause.objects.exists() and not AuditEntry.objects.exists()


def test_a_queue_name_of_255_characters_can_still_be_paused(admin_client):
    admin_client.post(url("queue-pause", "q" * 255))
    assert Pause.objects.filter(queue_name="q" * 255).exists()
