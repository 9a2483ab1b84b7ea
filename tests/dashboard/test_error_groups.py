"""Failed jobs grouped by error, and retrying or discarding exactly one group's jobs."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import FailedExecution, Job
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.error_groups import error_groups, normalise
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import dashboard as tasks

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "message,expected",
    [
        ("Card 4242 declined for order 'A-17'", "Card <n> declined for order '…'"),
        ('Timeout after 3.5s talking to "api.example"', "Timeout after <n>s talking to '…'"),
        (
            "Row 0x1f2e missing in 5f3a9c1e2b7d4f60aa01 (id 123e4567-e89b-12d3-a456-426614174000)",
            "Row <hex> missing in <hex> (id <uuid>)",
        ),
        ("first line 1\nsecond line 2", "first line <n>"),
        ("", ""),
    ],
)
def test_messages_are_normalised(message, expected):
    assert normalise(message) == expected


def fail(*messages: str) -> list[int]:
    ids = [int(tasks.fail.enqueue(message).id) for message in messages]
    run_ready_jobs()
    return ids


def test_failures_are_grouped_by_class_and_normalised_message():
    declined = fail("card 1 declined", "card 22 declined", "card 333 declined")
    timeouts = fail("timeout after 5s")
    FailedExecution.objects.filter(job_id=declined[0]).update(
        created_at=timezone.now() - timedelta(hours=2)
    )
    groups = error_groups().groups
    assert [(g.exception_class, g.message, g.count) for g in groups] == [
        ("builtins.RuntimeError", "card <n> declined", 3),
        ("builtins.RuntimeError", "timeout after <n>s", 1),
    ]
    assert sorted(groups[0].job_ids) == sorted(declined) and groups[1].job_ids == timeouts
    assert groups[0].first_seen < timezone.now() - timedelta(hours=1) < groups[0].last_seen


def test_the_overview_and_the_errors_page_show_the_groups(admin_client):
    fail("card 1 declined", "card 2 declined", "disk full on /dev/sda1")
    html = admin_client.get(reverse("steady_queue_dashboard:overview")).content.decode()
    assert "Failures by error" in html and "card &lt;n&gt; declined" in html
    html = admin_client.get(reverse("steady_queue_dashboard:error-groups")).content.decode()
    assert "card &lt;n&gt; declined" in html and "Retry group…" in html
    assert "Discard group…" in html


def group_action_url(admin_client, action: str) -> str:
    html = admin_client.get(reverse("steady_queue_dashboard:error-groups")).content.decode()
    return re.search(rf'href="(/jobs/errors/[0-9a-f]+/{action}/)"', html).group(1)


def confirm_form(admin_client, url: str) -> dict:
    html = admin_client.get(url).content.decode()
    fields = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html)
    data: dict = {}
    for name, value in fields:
        data.setdefault(name, []).append(value)
    return data


def test_retry_a_group_acts_on_exactly_the_jobs_shown_and_is_audited(admin_client):
    shown = fail("card 1 declined", "card 2 declined")
    other = fail("disk full")
    url = group_action_url(admin_client, "retry")
    html = admin_client.get(url).content.decode()
    assert "Retry 2 jobs?" in html
    form = confirm_form(admin_client, url)
    assert sorted(int(pk) for pk in form["ids"]) == sorted(shown)
    later = fail("card 3 declined")  # same error, after the page was shown

    response = admin_client.post(url, form)
    assert response.status_code == 302
    still_failed = set(
        Job.objects.filter(failed_execution__isnull=False).values_list("pk", flat=True)
    )
    assert still_failed == set(other + later)
    entry = AuditEntry.objects.get()
    assert entry.action == "retry error group" and entry.affected == 2
    assert "card <n> declined" in entry.target and entry.details["jobs"] == sorted(shown)


def test_discard_a_group(admin_client):
    shown = fail("card 1 declined", "card 2 declined")
    url = group_action_url(admin_client, "discard")
    admin_client.post(url, confirm_form(admin_client, url))
    assert not Job.objects.filter(pk__in=shown).exists()
    assert AuditEntry.objects.get().action == "discard error group"


def test_a_group_action_without_its_confirmation_does_nothing(admin_client):
    shown = fail("card 1 declined", "card 2 declined")
    url = group_action_url(admin_client, "discard")
    form = confirm_form(admin_client, url)
    for data in [
        {"ids": form["ids"]},  # no token
        {**form, "ids": form["ids"] + [str(fail("card 9 declined")[0])]},  # widened
        {**form, "confirm": "forged"},
    ]:
        admin_client.post(url, data)
    assert Job.objects.filter(pk__in=shown, failed_execution__isnull=False).count() == 2
    assert not AuditEntry.objects.filter(succeeded=True).exists()


def test_a_confirmed_group_leaves_jobs_that_changed_error_alone(admin_client):
    shown = fail("card 1 declined", "card 2 declined")
    url = group_action_url(admin_client, "retry")
    form = confirm_form(admin_client, url)
    FailedExecution.objects.filter(job_id=shown[0]).update(message="something else")
    admin_client.post(url, form)
    assert Job.objects.filter(pk=shown[0], failed_execution__isnull=False).exists()
    assert not Job.objects.filter(pk=shown[1], failed_execution__isnull=False).exists()


def test_viewers_see_groups_but_cannot_act(viewer_client, admin_client):
    shown = fail("card 1 declined")
    url = group_action_url(admin_client, "discard")
    form = confirm_form(admin_client, url)
    html = viewer_client.get(url).content.decode()
    assert "You may look but not act" in html
    assert viewer_client.post(url, form).status_code == 403
    assert Job.objects.filter(pk__in=shown).exists()


@pytest.mark.parametrize(
    "path", ["/jobs/errors/0123/explode/", "/jobs/errors/0123/retry/", "/jobs/errors/%00/retry/"]
)
def test_unknown_groups_and_actions_answer_404(admin_client, path):
    assert admin_client.get(path).status_code == 404


def test_the_errors_page_runs_a_bounded_number_of_queries(
    admin_client, django_assert_max_num_queries
):
    fail(*[f"error {n % 4} at {n}" for n in range(30)])
    with django_assert_max_num_queries(4):
        assert admin_client.get(reverse("steady_queue_dashboard:error-groups")).status_code == 200


def test_the_group_confirmation_runs_a_bounded_number_of_queries(
    admin_client, django_assert_max_num_queries
):
    fail(*[f"card {n} declined" for n in range(30)])
    url = group_action_url(admin_client, "retry")
    with django_assert_max_num_queries(3):
        assert "Retry 30 jobs?" in admin_client.get(url).content.decode()


def test_a_group_is_asked_about_with_the_one_question_of_every_action(admin_client):
    """Issue 25, 8: the same question as every job action: count, ids, the error, and
    buttons that say what they do."""
    shown = fail("card 1 declined", "card 2 declined")
    html = admin_client.get(group_action_url(admin_client, "discard")).content.decode()
    assert 'id="sq-confirm-form"' in html and "Discard 2 jobs?" in html
    assert "failed with builtins.RuntimeError: card &lt;n&gt; declined" in html
    assert ">Discard 2 jobs</button>" in html and ">Go back, change nothing</a>" in html
    for pk in shown:
        assert f">#{pk}</a>" in html
