"""Fuzz every dashboard URL and form: never a 500, never a change nobody confirmed.

Hypothesis drives generated requests (cursors, filters, ids, keys, unicode, huge numbers,
NUL bytes) as staff without the permission, who may change nothing, and as staff with
it, posting to the actions that must be confirmed first, which no generated request
can confirm. The example budget is fixed and derandomized so that CI runs are repeatable
and quick; the test reports how many requests it made.
"""

from __future__ import annotations

import base64
import json
import os
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth.models import Permission, User
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steady_queue.models import (
    ArchivedJob,
    FairWeight,
    Job,
    JobSignal,
    Pause,
    RecurringTask,
    Semaphore,
)
from steady_queue.pauses import pause_task
from steady_queue_dashboard.listings import LISTINGS
from steady_queue_dashboard.models import AuditEntry
from tests import tasks as plain_tasks
from tests.dashboard.conftest import make_jobs
from tests.dashboard.test_archive import archived

pytestmark = pytest.mark.django_db

# Fixed for CI; SQ_FUZZ_EXAMPLES runs a longer, randomized hunt locally.
EXAMPLES = int(os.environ.get("SQ_FUZZ_EXAMPLES", 120))
STATUSES = list(LISTINGS)
FIELDS = [
    "task", "queue", "priority", "period", "after", "before", "error", "key", "args",
    "page_after", "page_before", "ids", "scope", "confirm", "confirmed", "next", "span",
    "batch", "workflow", "description", "name", "label", "label", "label_mode", "kind",
]  # fmt: skip

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
cursors = json_values.map(
    lambda value: base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
)
numbers = st.integers(min_value=-(10**40), max_value=10**40).map(str)
texts = st.text(max_size=30)
special = st.sampled_from(
    ["NaN", "1e999", "-Infinity", "isnull=1", "²", "\x00", "9" * 40, "2026-13-45T99:99",
     "2026-11-23T10:00", "all", "1", "true", "x=", "=", "%00", "../../", "<script>",
     "99999999999d", "3000000d", "9" * 400, "0001-01-01T00:00", "9999-12-31T23:59",
     "any", "tenant:7", "a,b", "x" * 101]
)  # fmt: skip
values = st.one_of(texts, numbers, cursors, special)
params = st.lists(st.tuples(st.sampled_from(FIELDS) | texts, values), max_size=6)
keys = st.one_of(
    texts.filter(bool),
    st.sampled_from(["default", "low", "mail/pause", "nightly/run", "a\x00b", "x/../y", "q" * 300]),
)
job_ids = st.one_of(st.integers(min_value=0, max_value=10**40), st.integers(1, 12))


def page_paths(status: str, key: str, pk: int) -> list[str]:
    k = quote(key, safe="/")
    return [
        "/jobs/",
        "/jobs/queues/",
        f"/jobs/queues/{k}/",
        f"/jobs/{status}/",
        f"/jobs/{pk}/",
        "/jobs/processes/",
        "/jobs/recurring/",
        f"/jobs/recurring/{k}/",
        "/jobs/schedules/new/",
        "/jobs/new/",
        f"/jobs/{pk}/edit/",
        f"/jobs/{pk}/retry-with-changes/",
        f"/jobs/{pk}/duplicate/",
        f"/jobs/schedules/edit/{k}/",
        "/jobs/concurrency/",
        "/jobs/rate-limits/",
        "/jobs/batches/",
        f"/jobs/batches/{pk}/",
        "/jobs/workflows/",
        f"/jobs/workflows/{pk}/",
        "/jobs/audit/",
        "/jobs/errors/",
        "/jobs/waits/",
        "/jobs/archive/",
        f"/jobs/archive/{pk}/",
        f"/jobs/archive/{pk}/restore/",
        "/jobs/retention/",
    ]


def action_paths(status: str, key: str, pk: int) -> list[str]:
    k = quote(key, safe="/")
    return [
        *(f"/jobs/actions/jobs/{status}/{verb}/" for verb in ("retry", "discard", "dispatch")),
        *(f"/jobs/actions/job/{verb}/{pk}/" for verb in ("retry", "discard", "dispatch")),
        f"/jobs/actions/job/release/{pk}/",
        f"/jobs/actions/queue/pause/{k}/",
        f"/jobs/actions/queue/resume/{k}/",
        *(f"/jobs/actions/recurring/{verb}/{k}/" for verb in ("run", "enable", "disable")),
        f"/jobs/actions/recurring/delete/{k}/",
        f"/jobs/actions/concurrency/release/{k}/",
        *(f"/jobs/actions/fairness/{verb}/{k}/" for verb in ("weight", "clear")),
        *(f"/jobs/errors/{quote(key, safe='')}/{verb}/" for verb in ("retry", "discard")),
    ]


def confirmed_actions(status: str, pk: int, key: str) -> list[str]:
    """Actions the operator must confirm: discarding a job, anything on "all matching", and
    a group of failures."""
    k = quote(key, safe="/")
    return [
        f"/jobs/actions/job/discard/{pk}/",
        *(f"/jobs/actions/fairness/{verb}/{k}/" for verb in ("weight", "clear")),
        *(f"/jobs/errors/{quote(key, safe='')}/{verb}/" for verb in ("retry", "discard")),
        *(f"/jobs/actions/jobs/{status}/{verb}/" for verb in ("retry", "discard", "dispatch")),
    ]


def snapshot() -> tuple:
    return (
        sorted((job.pk, job.state) for job in Job.objects.with_execution()),
        sorted(Pause.objects.values_list("queue_name", flat=True)),
        sorted(RecurringTask.objects.values_list("key", "enabled")),
        sorted(Semaphore.objects.values_list("key", "value")),
        sorted(FairWeight.objects.values_list("task_path", "key", "weight")),
        sorted(JobSignal.objects.values_list("job_id", "name")),
        sorted(ArchivedJob.objects.values_list("pk", "restored_job_id")),
    )


@pytest.fixture
def world(db, fair_share):
    jobs = make_jobs()
    fair_share.by_tenant.enqueue("acme")  # a queue page with its Fair share panel
    Pause.objects.create(queue_name="mail/pause")
    pause_task(plain_tasks.echo)  # a row on the paused list too
    plain_tasks.echo.enqueue("paused")
    RecurringTask.objects.create(
        key="nightly/run", schedule="0 3 * * *", task_path="tests.tasks.dashboard.record"
    )
    jobs.archived = archived(job_id=jobs.failed.pk)  # an Archive row, restorable
    return jobs


def test_fuzz_every_url_and_form(viewer_client, operator_client, world, record_property):
    for client in (viewer_client, operator_client):
        client.raise_request_exception = False
        client.defaults["HTTP_HOST"] = "testserver"
    before = snapshot()
    sent = {"requests": 0}
    real_ids = [world.failed.pk, world.pending.pk, world.scheduled.pk, world.blocked.pk]
    real_ids.append(world.archived.pk)

    def send(client, method: str, path: str, data: list[tuple[str, str]], htmx: bool):
        extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
        if method == "get":
            response = client.get(f"{path}?{urlencode(data)}", **extra)
        else:
            body = urlencode(data)
            response = client.post(path, body, "application/x-www-form-urlencoded", **extra)
        sent["requests"] += 1
        assert response.status_code < 500, (method, path, data, response.status_code)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize="SQ_FUZZ_EXAMPLES" not in os.environ,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(
        status=st.sampled_from(STATUSES),
        key=keys,
        pk=job_ids | st.sampled_from(real_ids),
        data=params,
        htmx=st.booleans(),
        choice=st.integers(min_value=0, max_value=10**6),
    )
    def run(status, key, pk, data, htmx, choice):
        pages = page_paths(status, key, pk)
        send(viewer_client, "get", pages[choice % len(pages)], data, htmx)
        actions = action_paths(status, key, pk)
        send(viewer_client, "post", actions[choice % len(actions)], data, htmx)
        confirmed = confirmed_actions(status, pk, key)
        # "Selected" rows act without a confirmation by design (the operator ticked them).
        scoped = [(name, value) for name, value in data if name != "scope"] + [("scope", "all")]
        send(operator_client, "post", confirmed[choice % len(confirmed)], scoped, htmx)
        assert snapshot() == before

    run()
    record_property("dashboard_fuzz_requests", sent["requests"])
    print(f"\ndashboard fuzz: {sent['requests']} requests, {EXAMPLES} examples, 0 answered 500")
    assert sent["requests"] >= EXAMPLES * 3


# The job-changing forms, as staff who may use them: whatever is posted (bad JSON, huge
# numbers, odd dates, tasks nobody knows, forged tokens), nothing changes without the
# confirmation step, and nothing answers 500.
CHANGE_FIELDS = [
    "args", "kwargs", "priority", "queue_name", "run_after", "task", "param_name",
    "param_times", "confirm", "edit", "save", "name", "payload",
]  # fmt: skip
change_values = st.one_of(
    values,
    json_values.map(json.dumps),
    st.sampled_from(["[]", "{}", "[1]", '{"a": 1}', "tests.tasks.greet", "os.system", "low"]),
)


settings_for_fuzz = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="SQ_FUZZ_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def test_fuzz_the_job_change_forms(operator_client, world, settings, record_property):
    settings.STEADY_QUEUE_DASHBOARD = {"TASKS": ["tests.tasks.greet", "tests.tasks.echo"]}
    user = operator_client.session.get("_auth_user_id")
    User.objects.get(pk=user).user_permissions.add(Permission.objects.get(codename="edit_jobs"))
    operator_client.raise_request_exception = False
    before = snapshot()
    real_ids = [world.failed.pk, world.pending.pk, world.scheduled.pk, world.finished.pk]
    real_ids.append(world.archived.pk)
    sent = {"requests": 0}

    @settings_for_fuzz
    @given(
        pk=job_ids | st.sampled_from(real_ids),
        data=st.lists(st.tuples(st.sampled_from(CHANGE_FIELDS), change_values), max_size=8),
        htmx=st.booleans(),
        choice=st.integers(min_value=0, max_value=5),
        method=st.sampled_from(["get", "post"]),
    )
    def run(pk, data, htmx, choice, method):
        path = [f"/jobs/{pk}/edit/", f"/jobs/{pk}/retry-with-changes/",
                f"/jobs/{pk}/duplicate/", "/jobs/new/", f"/jobs/{pk}/signal/",
                f"/jobs/archive/{pk}/restore/"][choice]  # fmt: skip
        extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
        if method == "get":
            response = operator_client.get(f"{path}?{urlencode(data)}", **extra)
        else:
            body = urlencode(data)
            content_type = "application/x-www-form-urlencoded"
            response = operator_client.post(path, body, content_type, **extra)
        sent["requests"] += 1
        assert response.status_code < 500, (method, path, data, response.status_code)
        assert snapshot() == before and not AuditEntry.objects.exists()

    run()
    record_property("dashboard_change_fuzz_requests", sent["requests"])
    assert sent["requests"] >= EXAMPLES


@pytest.mark.parametrize("mode", ["all", "any", "", "\x00"])
def test_a_thousand_labels_never_answer_500_nor_act(operator_client, world, mode):
    """A pasted or forged query string with 1,000 labels: every list answers, nothing moves."""
    operator_client.raise_request_exception = False
    before = snapshot()
    # 1,000 fields in all: Django's DATA_UPLOAD_MAX_NUMBER_FIELDS answers 400 beyond.
    data = [("label", f"l{n}\u00e9,&") for n in range(999)] + [("label_mode", mode)]
    for status in STATUSES:
        response = operator_client.get(f"/jobs/{status}/?{urlencode(data)}")
        assert response.status_code == 200, status
        assert "Some filters are not valid" in response.content.decode()
    for verb in ("retry", "discard"):
        body = urlencode([*data, ("scope", "all")])
        response = operator_client.post(
            f"/jobs/actions/jobs/failed/{verb}/", body, "application/x-www-form-urlencoded"
        )
        assert response.status_code < 500
    assert snapshot() == before
