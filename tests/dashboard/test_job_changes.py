"""The console's job changes: edit, retry with changes, duplicate, new job.

Each is a form, a diff to confirm, then the change through the engine's API, audited with
before and after; masked values stay masked; only staff with ``edit_jobs`` see or use them.
"""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steady_queue import arguments
from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import dashboard as tasks
from tests.tasks import masked

pytestmark = pytest.mark.django_db

NEW = reverse("steady_queue_dashboard:job-new")


def url(name: str, pk: int) -> str:
    return reverse(f"steady_queue_dashboard:job-{name}", args=[pk])


@pytest.fixture
def editor(db) -> Client:
    """Staff with the edit permission only (not manage_jobs)."""
    user = User.objects.create_user("editor", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="edit_jobs"))
    client = Client()
    client.force_login(user)
    return client


def token_of(response) -> str:
    found = re.search(r'name="confirm" value="([^"]+)"', response.content.decode())
    assert found, response.content.decode()
    return found.group(1)


def diff_of(response) -> list[tuple[str, ...]]:
    page = response.content.decode()
    table = re.search(r'<table class="table" id="change-diff">(.*?)</table>', page, re.S)
    assert table, page
    rows = re.findall(r"<tr><th scope=\"row\">(.*?)</th>(.*?)</tr>", table.group(1), re.S)
    cells_of = re.compile(r'<td class="mono">(.*?)</td>', re.S)
    return [
        tuple(html.unescape(text) for text in (label, *cells_of.findall(cells)))
        for label, cells in rows
    ]


def job_of(result) -> Job:
    return Job.objects.with_execution().get(pk=result.id)


def failed_job(*args, **kwargs) -> Job:
    job = job_of(tasks.fail.enqueue(*args, **kwargs))
    run_ready_jobs()
    return Job.objects.with_execution().get(pk=job.pk)


def edit_fields(job: Job, **changes) -> dict:
    fields = {
        "args": "[]",
        "kwargs": "{}",
        "priority": str(job.priority),
        "queue_name": job.queue_name,
        "run_after": "",
    }
    return {**fields, **changes}


# Edit ---------------------------------------------------------------------------------------


def test_the_edit_form_shows_the_jobs_values(editor, django_assert_max_num_queries):
    job = job_of(tasks.record.using(queue_name="low", priority=3).enqueue(42, full=True))

    with django_assert_max_num_queries(6):
        response = editor.get(url("edit", job.pk))

    page = response.content.decode()
    assert response.status_code == 200
    assert "[42]" in page and "{&quot;full&quot;: true}" in page
    assert 'value="low"' in page and 'value="3"' in page


def test_edit_shows_the_diff_then_saves_and_audits(editor, django_assert_max_num_queries):
    job = job_of(tasks.record.using(queue_name="low").enqueue(42))
    fields = edit_fields(job, args="[8]", priority="10", queue_name="default")

    with django_assert_max_num_queries(6):
        question = editor.post(url("edit", job.pk), fields)

    assert diff_of(question) == [
        ("Arguments", "[42]", "[8]"),
        ("Priority", "0", "10"),
        ("Queue", "low", "default"),
    ]
    assert Job.objects.get(pk=job.pk).arguments["args"] == [42]
    assert not AuditEntry.objects.exists()

    with django_assert_max_num_queries(20):
        done = editor.post(url("edit", job.pk), {**fields, "confirm": token_of(question)})

    assert done.status_code == 302 and done["Location"] == url("detail", job.pk)
    changed = Job.objects.get(pk=job.pk)
    assert (changed.arguments["args"], changed.priority, changed.queue_name) == ([8], 10, "default")
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.target) == ("editor", "edit", f"job {job.pk}")
    before, after = entry.details["before"], entry.details["after"]
    assert before == {"arguments": {"args": [42], "kwargs": {}}, "priority": 0, "queue_name": "low"}
    assert after == {
        "arguments": {"args": [8], "kwargs": {}},
        "priority": 10,
        "queue_name": "default",
    }
    assert entry.link == url("detail", job.pk)


def test_edit_moves_the_due_time(editor):
    job = job_of(tasks.record.using(run_after=timedelta(hours=1)).enqueue(1))
    later = timezone.localtime(job.scheduled_at + timedelta(days=1))
    fields = edit_fields(job, args="[1]", run_after=later.strftime("%Y-%m-%dT%H:%M"))

    question = editor.post(url("edit", job.pk), fields)
    [(label, before, after)] = diff_of(question)
    assert label == "Run after" and before != after
    editor.post(url("edit", job.pk), {**fields, "confirm": token_of(question)})

    moved = Job.objects.get(pk=job.pk).scheduled_at
    assert abs(moved - later) < timedelta(minutes=1)


def test_a_stale_confirmation_changes_nothing_and_says_so(editor):
    job = job_of(tasks.record.enqueue(42))
    fields = edit_fields(job, args="[8]")
    question = editor.post(url("edit", job.pk), fields)
    Job.objects.filter(pk=job.pk).update(priority=5)  # someone else changed it meanwhile

    response = editor.post(url("edit", job.pk), {**fields, "confirm": token_of(question)})

    page = response.content.decode()
    assert response.status_code == 200
    assert 'id="change-stale"' in page and "nothing was done" in page
    assert Job.objects.get(pk=job.pk).arguments["args"] == [42]
    assert not AuditEntry.objects.exists()


def test_a_job_that_started_meanwhile_is_not_edited(editor, jobs):
    fields = edit_fields(jobs.pending, args="[8]", queue_name="low")
    question = editor.post(url("edit", jobs.pending.pk), fields)
    run_ready_jobs()  # it ran, and finished

    response = editor.post(url("edit", jobs.pending.pk), {**fields, "confirm": token_of(question)})

    assert 'id="change-refused"' in response.content.decode()
    assert "Nothing was changed" in response.content.decode()
    assert Job.objects.get(pk=jobs.pending.pk).arguments["args"] == [42]
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize("state", ["running", "finished"])
def test_started_and_finished_jobs_have_no_edit(editor, jobs, state):
    job = getattr(jobs, state)
    page = editor.get(url("detail", job.pk)).content.decode()
    assert 'id="job-edit"' not in page and 'id="job-duplicate"' in page

    response = editor.post(url("edit", job.pk), edit_fields(job, args="[8]"))
    assert 'id="change-refused"' in response.content.decode()
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"args": "[1, 2"}, "args", "Not valid JSON"),
        ({"args": '{"a": 1}'}, "args", "Must be a JSON list"),
        ({"kwargs": "[1]"}, "kwargs", "Must be a JSON object"),
        ({"priority": "x"}, "priority", "Enter a whole number"),
        ({"priority": "100000"}, "priority", "priority"),
        ({"queue_name": "nowhere"}, "queue_name", "nowhere"),
        ({"run_after": "2026-13-45T99:99"}, "run_after", "Enter a valid date/time"),
    ],
)
def test_bad_input_is_shown_inline_and_changes_nothing(editor, changes, field, words):
    job = job_of(tasks.record.enqueue(42))

    response = editor.post(url("edit", job.pk), {**edit_fields(job, args="[42]"), **changes})

    page = response.content.decode()
    assert response.status_code == 200
    assert re.search(rf'id="error-{field}">[^<]*{re.escape(words)}', page), page
    assert 'name="confirm"' not in page
    assert Job.objects.get(pk=job.pk).arguments["args"] == [42]


def test_arguments_the_task_cannot_take_are_refused_inline(editor):
    job = failed_job("it broke")

    response = editor.post(url("edit", job.pk), edit_fields(job, args='["a", "b", "c"]'))

    assert re.search(r'id="error-args">[^<]*cannot take these arguments', response.content.decode())


def test_nothing_changed_is_said(editor):
    job = job_of(tasks.record.enqueue(42))
    response = editor.post(url("edit", job.pk), edit_fields(job, args="[42]"))
    assert "Nothing was changed" in response.content.decode()


# Masking ------------------------------------------------------------------------------------


def test_masked_arguments_stay_masked_in_the_form_diff_and_audit(editor):
    job = job_of(masked.charge.enqueue("4111-1111", amount=5, note="x"))
    form = editor.get(url("edit", job.pk)).content.decode()
    assert "4111" not in form and "[&quot;[masked]&quot;]" in form

    fields = edit_fields(job, args='["[masked]"]', kwargs='{"amount": 7, "note": "x"}')
    question = editor.post(url("edit", job.pk), fields)
    assert "4111" not in question.content.decode()
    assert diff_of(question) == [
        ("Keyword arguments", '{"amount": 5, "note": "x"}', '{"amount": 7, "note": "x"}')
    ]
    editor.post(url("edit", job.pk), {**fields, "confirm": token_of(question)})

    changed = Job.objects.get(pk=job.pk)
    assert changed.arguments["args"] == ["4111-1111"]  # left [masked]: kept
    assert changed.arguments["kwargs"]["amount"] == 7
    entry = AuditEntry.objects.get()
    assert "4111" not in str(entry.details)


def test_a_changed_masked_value_shows_as_changed_but_masked(editor):
    job = job_of(masked.charge.enqueue("4111-1111", amount=5))
    fields = edit_fields(job, args='["5555-0000"]', kwargs='{"amount": 5}')

    question = editor.post(url("edit", job.pk), fields)

    [(_, before, after)] = diff_of(question)
    assert before == '["[masked]"]' and "masked value changed" in after
    page = question.content.decode()
    assert "4111" not in page
    editor.post(url("edit", job.pk), {**fields, "confirm": token_of(question)})
    assert Job.objects.get(pk=job.pk).arguments["args"] == ["5555-0000"]
    assert "5555" not in str(AuditEntry.objects.get().details)


# Retry with changes, duplicate ---------------------------------------------------------------


def test_retry_with_changes_runs_the_failed_job_with_new_arguments(
    editor, django_assert_max_num_queries
):
    job = failed_job("it broke")
    fields = {"args": '["still broken"]', "kwargs": "{}"}

    with django_assert_max_num_queries(6):
        question = editor.post(url("retry-changed", job.pk), fields)
    assert diff_of(question) == [("Arguments", '["it broke"]', '["still broken"]')]

    # The engine's edit and retry (lock, checks, moving the job) and its audit entry.
    with django_assert_max_num_queries(26):
        editor.post(url("retry-changed", job.pk), {**fields, "confirm": token_of(question)})

    retried = Job.objects.with_execution().get(pk=job.pk)
    assert retried.state == "ready" and retried.arguments["args"] == ["still broken"]
    assert AuditEntry.objects.get().action == "retry with changes"


def test_retry_with_changes_is_only_for_failed_jobs(editor, jobs):
    response = editor.post(url("retry-changed", jobs.pending.pk), {"args": "[1]", "kwargs": "{}"})
    assert "only failed jobs can be retried" in response.content.decode()
    assert not AuditEntry.objects.exists()


def test_duplicate_enqueues_a_copy_with_the_same_or_changed_arguments(
    editor, django_assert_max_num_queries
):
    job = job_of(tasks.record.using(queue_name="low").enqueue(42))
    same = {"args": "[42]", "kwargs": "{}"}
    with django_assert_max_num_queries(5):
        question = editor.post(url("duplicate", job.pk), same)
    assert "The same arguments as the job." in question.content.decode()
    with django_assert_max_num_queries(12):
        done = editor.post(url("duplicate", job.pk), {**same, "confirm": token_of(question)})

    copy = Job.objects.exclude(pk=job.pk).get()
    assert done["Location"] == url("detail", copy.pk)
    assert (copy.task_path, copy.arguments["args"], copy.queue_name) == (job.task_path, [42], "low")

    changed = {"args": "[43]", "kwargs": "{}"}
    question = editor.post(url("duplicate", job.pk), changed)
    editor.post(url("duplicate", job.pk), {**changed, "confirm": token_of(question)})
    assert Job.objects.order_by("-pk").first().arguments["args"] == [43]
    assert [e.action for e in AuditEntry.objects.all()] == ["duplicate", "duplicate"]


# New job --------------------------------------------------------------------------------------


def test_new_job_offers_the_known_tasks(editor, settings, django_assert_max_num_queries):
    tasks.record.enqueue(1)
    settings.STEADY_QUEUE_DASHBOARD = {"TASKS": ["tests.tasks.greet"]}

    with django_assert_max_num_queries(6):
        page = editor.get(NEW).content.decode()

    options = re.findall(r'<option value="([^"]*)"', page)
    assert options == ["", "tests.tasks.dashboard.record", "tests.tasks.greet"]


def test_new_job_builds_a_field_per_parameter_and_enqueues_it(
    editor, settings, django_assert_max_num_queries
):
    settings.STEADY_QUEUE_DASHBOARD = {"TASKS": ["tests.tasks.greet"]}
    with django_assert_max_num_queries(6):
        form = editor.get(NEW, {"task": "tests.tasks.greet"}).content.decode()
    assert 'name="param_name"' in form and 'name="param_times"' in form
    assert "Default: 1." in form

    fields = {
        "task": "tests.tasks.greet",
        "param_name": "Ada",
        "param_times": "",
        "priority": "3",
        "queue_name": "",
        "run_after": "",
    }
    with django_assert_max_num_queries(6):
        question = editor.post(NEW, fields)
    rows = dict((label, value) for label, value in diff_of(question))
    assert rows["Keyword arguments"] == '{"name": "Ada"}' and rows["Priority"] == "3"
    assert rows["Queue"] == "the task's (real_time)"
    assert not Job.objects.exists()

    with django_assert_max_num_queries(12):
        done = editor.post(NEW, {**fields, "confirm": token_of(question)})

    job = Job.objects.get()
    assert done["Location"] == url("detail", job.pk)
    assert (job.task_path, job.arguments["kwargs"], job.priority) == (
        "tests.tasks.greet",
        {"name": "Ada"},
        3,
    )
    assert job.queue_name == "real_time"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target, entry.username) == ("enqueue", f"job {job.pk}", "editor")
    assert entry.details == {
        "task": "tests.tasks.greet",
        "job": job.pk,
        "after": {
            "arguments": {"args": [], "kwargs": {"name": "Ada"}},
            "queue_name": "real_time",
            "priority": 3,
            "scheduled_at": None,
        },
    }


def test_new_job_of_a_variadic_task_takes_json_arguments(editor, settings):
    settings.STEADY_QUEUE_DASHBOARD = {"TASKS": ["tests.tasks.echo"]}
    fields = {
        "task": "tests.tasks.echo",
        "args": "[1, 2]",
        "kwargs": '{"x": 3}',
        "queue_name": "low",
        "run_after": "",
    }
    question = editor.post(NEW, fields)
    editor.post(NEW, {**fields, "confirm": token_of(question)})

    job = Job.objects.get()
    assert job.arguments == {"args": [1, 2], "kwargs": {"x": 3}} and job.queue_name == "low"


def test_a_new_jobs_masked_parameter_stays_masked_in_the_diff_and_audit(editor, settings):
    settings.STEADY_QUEUE_DASHBOARD = {"TASKS": ["tests.tasks.masked.charge"]}
    form = editor.get(NEW, {"task": "tests.tasks.masked.charge"}).content.decode()
    assert re.search(r'<input type="password" name="param_card_number"', form)

    fields = {"task": "tests.tasks.masked.charge", "param_card_number": '"4111-1111"',
              "param_amount": "5"}  # fmt: skip
    question = editor.post(NEW, fields)
    rows = dict(diff_of(question))
    assert rows["Keyword arguments"] == '{"amount": 5, "card_number": "[masked]"}'
    editor.post(NEW, {**fields, "confirm": token_of(question)})

    assert Job.objects.get().arguments["kwargs"]["card_number"] == "4111-1111"
    assert "4111" not in str(AuditEntry.objects.get().details)


def test_new_job_refuses_tasks_it_does_not_know_and_bad_input(editor, settings):
    settings.STEADY_QUEUE_DASHBOARD = {"TASKS": ["tests.tasks.greet", "tests.tasks.echo"]}
    unknown = editor.post(NEW, {"task": "os.system", "param_name": "x"})
    assert re.search(r'id="error-task">', unknown.content.decode())
    missing = editor.post(NEW, {"task": "tests.tasks.greet", "param_name": ""})
    assert re.search(r'id="error-param_name">', missing.content.decode())
    bad = editor.post(NEW, {"task": "tests.tasks.echo", "args": "[1,", "kwargs": "{}"})
    assert re.search(r'id="error-args">[^<]*Not valid JSON', bad.content.decode())
    queue = editor.post(NEW, {"task": "tests.tasks.echo", "args": "[]", "queue_name": "nowhere"})
    assert re.search(r'id="error-queue_name">', queue.content.decode()), queue.content.decode()
    assert not Job.objects.exists() and not AuditEntry.objects.exists()


def test_a_token_for_other_values_enqueues_nothing(editor, settings):
    settings.STEADY_QUEUE_DASHBOARD = {"TASKS": ["tests.tasks.greet"]}
    fields = {"task": "tests.tasks.greet", "param_name": "Ada"}
    token = token_of(editor.post(NEW, fields))

    response = editor.post(NEW, {**fields, "param_name": "Eve", "confirm": token})

    assert 'id="change-stale"' in response.content.decode()
    assert not Job.objects.exists()


# Permission ----------------------------------------------------------------------------------


def test_only_staff_with_the_edit_permission_see_or_use_the_forms(
    viewer_client, operator_client, member_client, client, jobs
):
    failed = jobs.failed.pk
    for refused in (viewer_client, operator_client, member_client):
        for path in (
            url("edit", failed),
            url("retry-changed", failed),
            url("duplicate", failed),
            NEW,
        ):
            assert refused.get(path).status_code == 403
            assert refused.post(path, {"args": "[1]"}).status_code == 403
    assert client.get(NEW).status_code == 302  # anonymous: to the login page
    page = operator_client.get(url("detail", failed)).content.decode()
    assert 'id="job-edit"' not in page and 'id="job-duplicate"' not in page
    listing = operator_client.get(reverse("steady_queue_dashboard:job-list", args=["failed"]))
    assert 'id="new-job"' not in listing.content.decode()
    assert not AuditEntry.objects.exists()


def test_editors_find_the_forms_on_the_job_page_and_list(editor, jobs, admin_client):
    page = editor.get(url("detail", jobs.failed.pk)).content.decode()
    for link in ("edit", "retry-changed", "duplicate"):
        assert f'href="{url(link, jobs.failed.pk)}"' in page
    listing = editor.get(reverse("steady_queue_dashboard:job-list", args=["failed"]))
    assert f'href="{NEW}"' in listing.content.decode()
    admin_client.defaults["HTTP_HX_REQUEST"] = "true"
    fragment = admin_client.get(url("edit", jobs.failed.pk)).content.decode()
    assert fragment.startswith('<div id="job-change-form">') and "<html" not in fragment


def test_a_unique_key_another_job_holds_is_refused_at_save_and_nothing_changes(editor):
    from tests.tasks import unique

    holder = job_of(unique.sync_account.enqueue(1))
    other = job_of(unique.sync_account.enqueue(2))
    fields = edit_fields(other, args="[1]")
    question = editor.post(url("edit", other.pk), fields)

    response = editor.post(url("edit", other.pk), {**fields, "confirm": token_of(question)})

    page = response.content.decode()
    assert response.status_code == 200
    assert re.search(rf'id="error-args">[^<]*Job {holder.pk} already holds the unique key', page)
    assert Job.objects.get(pk=other.pk).arguments["args"] == [2]
    assert not AuditEntry.objects.exists()


def test_a_cancelled_job_is_not_editable(editor, jobs):
    Job.objects.get(pk=jobs.pending.pk).cancel()

    page = editor.get(url("detail", jobs.pending.pk)).content.decode()
    assert 'id="job-edit"' not in page and 'id="job-retry-changed"' not in page
    response = editor.post(url("edit", jobs.pending.pk), edit_fields(jobs.pending, args="[1]"))
    assert "is cancelled" in response.content.decode()


def test_a_retry_with_nothing_changed_asks_for_a_change(editor):
    job = failed_job("it broke")
    response = editor.post(url("retry-changed", job.pk), {"args": '["it broke"]', "kwargs": "{}"})
    assert "Nothing was changed" in response.content.decode()
    assert Job.objects.with_execution().get(pk=job.pk).state == "failed"


# Keyword names a call can take (record(**kwargs)), not masked by the default patterns.
names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda name: not any(p in name for p in ("key", "token", "secret", "private", "passw"))
)
plain_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(args=st.lists(plain_json, max_size=3), kwargs=st.dictionaries(names, plain_json, max_size=3))
def test_the_arguments_typed_are_the_arguments_stored(editor, args, kwargs):
    job = job_of(tasks.record.enqueue("before"))
    fields = edit_fields(job, args=json.dumps(args), kwargs=json.dumps(kwargs))

    question = editor.post(url("edit", job.pk), fields)
    if args == ["before"] and kwargs == {}:
        return
    editor.post(url("edit", job.pk), {**fields, "confirm": token_of(question)})

    stored = arguments.deserialize(Job.objects.get(pk=job.pk).arguments)
    assert stored == (args, kwargs)


def test_a_job_whose_task_is_gone_gets_the_engines_message_on_the_form(editor):
    job = job_of(tasks.record.enqueue(42))
    Job.objects.filter(pk=job.pk).update(task_path="tests.tasks.gone")

    for name in ("edit", "duplicate"):
        response = editor.post(url(name, job.pk), edit_fields(job, args="[8]"))

        page = response.content.decode()
        assert response.status_code == 200
        assert re.search(r'id="change-errors">\s*<p>[^<]*cannot be imported', page), page
        assert 'name="confirm"' not in page
    assert Job.objects.count() == 1 and Job.objects.get().arguments["args"] == [42]


def test_edit_changes_the_labels_one_a_line_and_labelled_finds_the_job(editor):
    from steady_queue.labels import labels

    with labels("tenant:7", "a, b"):
        job = job_of(tasks.record.enqueue(42))
    page = editor.get(url("edit", job.pk)).content.decode()
    assert "tenant:7\na, b</textarea>" in page
    fields = edit_fields(job, args="[42]", labels="tenant:8\n\na, b\n")

    question = editor.post(url("edit", job.pk), fields)

    assert diff_of(question) == [("Labels", "tenant:7, a, b", "tenant:8, a, b")]
    editor.post(url("edit", job.pk), {**fields, "confirm": token_of(question)})
    assert Job.objects.get(pk=job.pk).labels == ["tenant:8", "a, b"]
    assert list(Job.objects.labelled(all=["tenant:8", "a, b"])) == [Job.objects.get(pk=job.pk)]
    entry = AuditEntry.objects.get()
    assert (entry.details["before"]["labels"], entry.details["after"]["labels"]) == (
        ["tenant:7", "a, b"],
        ["tenant:8", "a, b"],
    )


def test_labels_the_engine_refuses_are_shown_on_the_field_and_a_post_without_them_keeps_them(
    editor,
):
    from steady_queue.labels import labels

    with labels("tenant:7"):
        job = job_of(tasks.record.enqueue(42))

    refused = editor.post(url("edit", job.pk), edit_fields(job, args="[42]", labels="x" * 101))
    assert refused.status_code == 200 and 'id="error-labels"' in refused.content.decode()

    kept = editor.post(url("edit", job.pk), edit_fields(job, args="[43]"))
    assert [row[0] for row in diff_of(kept)] == ["Arguments"]
    assert Job.objects.get(pk=job.pk).labels == ["tenant:7"] and not AuditEntry.objects.exists()
