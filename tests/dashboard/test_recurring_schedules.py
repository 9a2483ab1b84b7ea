"""The console's schedule forms: new, edit (previewed, then confirmed), delete; permissions."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from steady_queue.models import RecurringTask
from steady_queue.recurring_task import schedule
from steady_queue_dashboard.models import AuditEntry

pytestmark = pytest.mark.django_db

NEW = reverse("steady_queue_dashboard:recurring-new")
FIELDS = {
    "key": "nightly",
    "task": "tests.tasks.add",
    "cron": "30 2 * * *",
    "timezone": "America/New_York",
    "args": "[1, 2]",
    "kwargs": "{}",
    "queue_name": "",
    "priority": "",
    "description": "adds",
    "catch_up": "",
}


def edit_url(key: str) -> str:
    return reverse("steady_queue_dashboard:recurring-edit", args=[key])


def delete_url(key: str) -> str:
    return reverse("steady_queue_dashboard:recurring-delete", args=[key])


@pytest.fixture
def editor(db) -> Client:
    """Staff with the edit permission only (not manage_jobs)."""
    user = User.objects.create_user("editor", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="edit_jobs"))
    client = Client()
    client.force_login(user)
    return client


def token_of(response) -> str:
    return re.search(r'name="confirm" value="([^"]+)"', response.content.decode()).group(1)


def previewed(client: Client, **changes):
    return client.post(NEW, {**FIELDS, **changes})


def test_the_form_previews_the_schedule_in_words_and_its_next_five_runs(
    editor, django_assert_max_num_queries
):
    with django_assert_max_num_queries(6):
        response = previewed(editor)

    page = response.content.decode()
    assert response.status_code == 200
    assert 'id="schedule-words">At 02:30<' in page
    runs = re.findall(r'<time datetime="([^"]+)"', page)
    assert len(runs) == 5 and all("T02:30:00-0" in run for run in runs)
    assert "Save schedule" in page
    assert not RecurringTask.objects.exists() and not AuditEntry.objects.exists()


def test_save_with_the_previews_token_creates_the_schedule_and_audits_it(
    editor, django_assert_max_num_queries
):
    token = token_of(previewed(editor))

    with django_assert_max_num_queries(14):
        response = editor.post(NEW, {**FIELDS, "confirm": token, "save": ""})

    assert response.status_code == 302
    assert response["Location"] == reverse(
        "steady_queue_dashboard:recurring-detail", args=["nightly"]
    )
    task = RecurringTask.objects.get()
    assert task.dynamic and (task.schedule, task.timezone) == ("30 2 * * *", "America/New_York")
    assert task.arguments == {"args": [1, 2], "kwargs": {}}
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.target) == (
        "editor",
        "schedule",
        "recurring task nightly",
    )
    assert entry.details["cron"] == "30 2 * * *" and entry.details["created"] is True


def test_a_token_for_other_values_saves_nothing_and_asks_again(editor):
    token = token_of(previewed(editor))

    response = editor.post(NEW, {**FIELDS, "cron": "* * * * *", "confirm": token, "save": ""})

    assert response.status_code == 200
    assert "changed since it was previewed" in response.content.decode()
    assert not RecurringTask.objects.exists() and not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"cron": "99 * * * *"}, "cron", "Bad cron schedule"),
        ({"timezone": "Mars/Olympus"}, "timezone", "not a known time zone"),
        ({"task": "tests.tasks.missing"}, "task", "Cannot import task"),
        ({"args": "[1, 2"}, "args", "Not valid JSON"),
        ({"args": "[1, 2, 3]"}, "args", "cannot take these arguments"),
        ({"queue_name": "nowhere"}, "queue_name", "not valid"),
    ],
)
def test_bad_input_is_shown_inline_and_writes_nothing(editor, changes, field, words):
    response = previewed(editor, **changes)

    page = response.content.decode()
    assert response.status_code == 200
    assert re.search(rf'id="error-{field}">[^<]*{re.escape(words)}', page), page
    assert "Save schedule" not in page
    assert not RecurringTask.objects.exists() and not AuditEntry.objects.exists()


def test_a_key_declared_in_code_is_refused_inline(editor, declared):
    RecurringTask.objects.create(key="nightly", task_path="tests.tasks.noop", schedule="@daily")

    response = previewed(editor)

    assert re.search(r'id="error-key">[^<]*declared in code', response.content.decode())
    assert RecurringTask.objects.get().schedule == "@daily"


def test_edit_shows_the_schedule_and_saves_a_new_cron(editor, django_assert_max_num_queries):
    schedule("nightly", "tests.tasks.add", cron="30 2 * * *", args=[1, 2])
    with django_assert_max_num_queries(6):
        page = editor.get(edit_url("nightly")).content.decode()
    assert 'value="30 2 * * *"' in page and "[1, 2]" in page

    fields = {**FIELDS, "key": "ignored: the URL names the key", "cron": "0 4 * * *"}
    token = token_of(editor.post(edit_url("nightly"), fields))
    editor.post(edit_url("nightly"), {**fields, "confirm": token, "save": ""})

    [task] = RecurringTask.objects.all()
    assert (task.key, task.schedule) == ("nightly", "0 4 * * *")
    assert AuditEntry.objects.get().details["created"] is False


def test_a_declared_schedule_has_no_edit_or_delete(editor):
    RecurringTask.objects.create(key="declared", task_path="tests.tasks.noop", schedule="@daily")

    assert editor.get(edit_url("declared")).status_code == 404
    assert editor.post(delete_url("declared")).status_code == 404
    assert RecurringTask.objects.filter(key="declared").exists()


def test_delete_asks_first_then_deletes_and_audits(editor):
    schedule("nightly", "tests.tasks.add", cron="30 2 * * *", args=[1, 2])

    question = editor.post(delete_url("nightly"))
    assert "Delete the schedule nightly?" in question.content.decode()
    assert RecurringTask.objects.exists()

    editor.post(delete_url("nightly"), {"confirm": token_of(question)})
    assert not RecurringTask.objects.exists()
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target) == ("unschedule", "recurring task nightly")


def test_only_staff_with_the_edit_permission_see_or_use_the_forms(
    viewer_client, operator_client, member_client, client
):
    schedule("nightly", "tests.tasks.add", cron="30 2 * * *", args=[1, 2])
    for refused in (viewer_client, operator_client, member_client):
        assert refused.get(NEW).status_code == 403
        assert refused.post(NEW, FIELDS).status_code == 403
        assert refused.get(edit_url("nightly")).status_code == 403
        assert refused.post(delete_url("nightly")).status_code == 403
    assert client.get(NEW).status_code == 302  # anonymous: to the login page
    list_page = operator_client.get(reverse("steady_queue_dashboard:recurring-list"))
    assert "New schedule" not in list_page.content.decode()
    assert RecurringTask.objects.get().schedule == "30 2 * * *"
    assert not AuditEntry.objects.exists()


def test_editors_find_the_forms_from_the_recurring_pages(editor, htmx):
    schedule("nightly", "tests.tasks.add", cron="30 2 * * *", args=[1, 2])

    list_page = editor.get(reverse("steady_queue_dashboard:recurring-list")).content.decode()
    detail = editor.get(reverse("steady_queue_dashboard:recurring-detail", args=["nightly"]))

    assert f'href="{NEW}"' in list_page
    assert f'href="{edit_url("nightly")}"' in detail.content.decode()
    fragment = htmx.get(NEW).content.decode()
    assert fragment.startswith('<div id="schedule-form">') and "<html" not in fragment
