"""Issue 25, item 8: every destructive action asks first, at every scope, and then acts on
exactly what it showed.

Discard and cancel, on one job, on the selected rows and on every job matching a filter:
the first POST changes nothing and answers with the count and the ids (or the filter);
only the confirmation's own form acts, on the ids it carried.
"""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

import pytest

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import dashboard as tasks

from .page_forms import confirm_form, hidden_fields, url

pytestmark = pytest.mark.django_db

# Every list offering a destructive action, with that action.
DESTRUCTIVE = [
    ("ready", "cancel"),
    ("ready", "discard"),
    ("scheduled", "cancel"),
    ("scheduled", "discard"),
    ("blocked", "cancel"),
    ("blocked", "discard"),
    ("failed", "discard"),
    ("cancelled", "discard"),
]
LABELS = {"cancel": "Cancel", "discard": "Discard"}
_keys = itertools.count(5000)


def make(status: str, count: int, queue: str = "default") -> list[int]:
    """``count`` jobs in ``status`` on ``queue``, made through the engine; their ids."""
    if status == "ready":
        results = [tasks.record.using(queue_name=queue).enqueue(n) for n in range(count)]
    elif status == "scheduled":
        later = tasks.record.using(queue_name=queue, run_after=timedelta(hours=1))
        results = [later.enqueue(n) for n in range(count)]
    elif status == "blocked":
        key = next(_keys)
        limited = tasks.limited.using(queue_name=queue)
        limited.enqueue(key)  # holds the key's one slot: the others wait
        results = [limited.enqueue(key) for _ in range(count)]
    elif status == "failed":
        results = [tasks.fail.using(queue_name=queue).enqueue(str(n)) for n in range(count)]
        run_ready_jobs()
    elif status == "cancelled":
        results = [tasks.record.using(queue_name=queue).enqueue(n) for n in range(count)]
        for result in results:
            Job.objects.get(pk=result.id).cancel()
    ids = sorted(int(result.id) for result in results)
    listed = set(Job.objects.with_execution().filter(pk__in=ids).values_list("pk", flat=True))
    assert listed == set(ids)
    return ids


def snapshot() -> dict[int, tuple]:
    """Every job's state, as much of it as an action could change."""
    rows = Job.objects.with_execution().order_by("pk")
    return {job.pk: (job.state, job.cancel_requested_at, job.finished_at) for job in rows}


def changed(before: dict[int, tuple]) -> set[int]:
    after = snapshot()
    return {pk for pk in before if after.get(pk) != before[pk]}


@pytest.mark.parametrize("status,action", DESTRUCTIVE)
def test_one_job_asks_first_then_acts_on_that_job_only(admin_client, status, action):
    pk, _other = make(status, 2)
    before = snapshot()
    asked = admin_client.post(url(f"job-{action}", pk))
    html = asked.content.decode()
    assert asked.status_code == 200 and f"{LABELS[action]} job #{pk}?" in html
    assert f">{LABELS[action]} job #{pk}</button>" in html
    assert not changed(before)
    admin_client.post(url(f"job-{action}", pk), confirm_form(html))
    assert changed(before) == {pk}


@pytest.mark.parametrize("status,action", DESTRUCTIVE)
def test_selected_jobs_ask_first_then_exactly_those_change(admin_client, status, action):
    chosen = make(status, 3)
    others = make(status, 2)
    before = snapshot()
    asked = admin_client.post(
        url(f"jobs-{action}", status), {"scope": "selected", "ids": chosen, "next": "/jobs/x/"}
    )
    html = asked.content.decode()
    assert asked.status_code == 200
    assert not changed(before), "the first POST changed jobs"
    assert f"{LABELS[action]} 3 jobs?" in html and f">{LABELS[action]} 3 jobs</button>" in html
    for pk in chosen:
        assert f">#{pk}</a>" in html
    for pk in others:
        assert f"#{pk}<" not in html
    assert ">Go back, change nothing</a>" in html
    form = confirm_form(html)
    assert sorted(int(pk) for pk in form["ids"]) == chosen
    admin_client.post(url(f"jobs-{action}", status), form)
    assert changed(before) == set(chosen)
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.affected) == (action, 3)


@pytest.mark.parametrize("status,action", DESTRUCTIVE)
def test_all_matching_asks_with_the_filter_count_and_first_ids(admin_client, status, action):
    matching = make(status, 3, queue="low")
    others = make(status, 2, queue="default")
    before = snapshot()
    asked = admin_client.post(url(f"jobs-{action}", status), {"scope": "all", "queue": "low"})
    html = asked.content.decode()
    assert not changed(before)
    assert f"{LABELS[action]} 3 jobs?" in html and "Queue=low" in html
    for pk in matching:
        assert f">#{pk}</a>" in html
    for pk in others:
        assert f"#{pk}<" not in html
    admin_client.post(url(f"jobs-{action}", status), confirm_form(html))
    assert changed(before) == set(matching)


def test_the_confirmation_acts_on_the_ids_it_showed_not_on_ids_added_to_it(admin_client):
    chosen = make("failed", 2)
    (extra,) = make("failed", 1)
    before = snapshot()
    html = admin_client.post(
        url("jobs-discard", "failed"), {"scope": "selected", "ids": chosen}
    ).content.decode()
    form = confirm_form(html)
    form["ids"] = [*form["ids"], str(extra)]
    again = admin_client.post(url("jobs-discard", "failed"), form)
    # Not what was shown: asked again (now with three jobs), nothing done.
    assert "changed since you were asked" in again.content.decode()
    assert "Discard 3 jobs?" in again.content.decode()
    assert not changed(before)
    form["ids"] = [str(chosen[0])]  # fewer than shown: asked again too
    assert (
        "Discard 1 job?" in admin_client.post(url("jobs-discard", "failed"), form).content.decode()
    )
    assert not changed(before)


def test_a_selection_is_not_widened_by_a_filter_that_moved_on(admin_client):
    """The confirmation acts on its ids, not on whatever the filter matches by then."""
    chosen = make("ready", 2, queue="low")
    before = snapshot()
    html = admin_client.post(
        url("jobs-cancel", "ready"), {"scope": "selected", "queue": "low", "ids": chosen}
    ).content.decode()
    form = confirm_form(html)
    assert form["queue"] == ["low"] and form["scope"] == ["selected"]
    make("ready", 1, queue="low")  # a new job the operator never saw
    admin_client.post(url("jobs-cancel", "ready"), form)
    assert changed(before) == set(chosen)
    assert Job.objects.filter(queue_name="low", ready_execution__isnull=False).count() == 1


def test_jobs_that_moved_on_before_the_question_are_named_apart(admin_client):
    kept, moved = make("failed", 2)
    Job.objects.get(pk=moved).retry()
    html = admin_client.post(
        url("jobs-discard", "failed"), {"scope": "selected", "ids": [kept, moved, 999999]}
    ).content.decode()
    assert "Discard 1 job?" in html and f">#{kept}</a>" in html and f"#{moved}<" not in html
    assert "2 other selected jobs are no longer failed" in html
    assert confirm_form(html)["ids"] == [str(kept)]


def test_jobs_that_moved_on_after_the_question_are_left_alone_and_counted(admin_client):
    chosen = make("failed", 3)
    html = admin_client.post(
        url("jobs-discard", "failed"), {"scope": "selected", "ids": chosen}
    ).content.decode()
    Job.objects.get(pk=chosen[0]).retry()  # someone else, meanwhile
    Job.objects.get(pk=chosen[1]).discard()
    response = admin_client.post(url("jobs-discard", "failed"), confirm_form(html))
    assert [str(m) for m in response.wsgi_request._messages] == [
        "1 job was discarded. 2 selected jobs had changed state or no longer exist."
    ]
    assert Job.objects.get(pk=chosen[0]).ready_execution is not None


def test_a_selection_that_is_all_gone_says_so_and_asks_nothing(admin_client):
    (pk,) = make("failed", 1)
    Job.objects.get(pk=pk).retry()
    response = admin_client.post(url("jobs-discard", "failed"), {"scope": "selected", "ids": [pk]})
    assert response.status_code == 302
    assert [str(m) for m in response.wsgi_request._messages] == [
        "None of the selected jobs is failed any more, so nothing was done."
    ]


def test_a_long_selection_lists_twenty_ids_and_counts_the_rest(admin_client):
    chosen = make("scheduled", 25)
    html = admin_client.post(
        url("jobs-discard", "scheduled"), {"scope": "selected", "ids": chosen}
    ).content.decode()
    assert "Discard 25 jobs?" in html and "and 5 more" in html
    assert f">#{chosen[19]}</a>" in html and f">#{chosen[20]}</a>" not in html
    assert len(confirm_form(html)["ids"]) == 25  # all of them travel, hidden
    admin_client.post(url("jobs-discard", "scheduled"), confirm_form(html))
    assert not Job.objects.filter(pk__in=chosen).exists()


@pytest.mark.parametrize(
    "ids", [["²"], ["9" * 40], ["-1"], ["1e3"], ["\x00"], ["abc", "1"], [], ["123456789"]]
)
def test_garbage_or_vanished_ids_never_answer_500_nor_change_anything(admin_client, ids):
    admin_client.raise_request_exception = False
    make("failed", 2)
    before = snapshot()
    for action in ("discard",):
        data = {"scope": "selected", "ids": ids}
        response = admin_client.post(url(f"jobs-{action}", "failed"), data)
        assert response.status_code < 500
        forged = {**data, "confirm": "forged"}
        assert admin_client.post(url(f"jobs-{action}", "failed"), forged).status_code < 500
    assert not changed(before)


def test_a_confirmation_with_garbage_ids_acts_on_nothing(admin_client):
    chosen = make("failed", 2)
    before = snapshot()
    html = admin_client.post(
        url("jobs-discard", "failed"), {"scope": "selected", "ids": chosen}
    ).content.decode()
    form = confirm_form(html)
    form["ids"] = [*form["ids"], "x"]
    response = admin_client.post(url("jobs-discard", "failed"), form)
    assert response.status_code == 302 and not changed(before)


def test_retry_and_dispatch_of_selected_rows_act_at_once(admin_client):
    """They destroy nothing and the rows are in view: no question (all matching asks)."""
    (failed,) = make("failed", 1)
    (scheduled,) = make("scheduled", 1)
    admin_client.post(url("jobs-retry", "failed"), {"scope": "selected", "ids": [failed]})
    admin_client.post(url("jobs-dispatch", "scheduled"), {"scope": "selected", "ids": [scheduled]})
    assert (
        Job.objects.filter(pk__in=[failed, scheduled], ready_execution__isnull=False).count() == 2
    )


def test_htmx_asks_in_the_messages_area_and_its_go_back_keeps_the_page(htmx):
    chosen = make("failed", 3)
    response = htmx.post(
        url("jobs-discard", "failed"),
        {"scope": "selected", "ids": chosen, "next": url("job-list", "failed") + "?queue=default"},
    )
    html = response.content.decode()
    assert "<html" not in html and html.startswith('<div id="sq-messages"')
    assert response["HX-Retarget"] == "#sq-messages" and response["HX-Reswap"] == "outerHTML"
    assert "HX-Trigger" not in response  # nothing changed: the list does not reload
    # Go back: a link to the list as it was, which the script turns into "close".
    assert 'href="/jobs/failed/?queue=default" data-sq-dismiss' in html
    confirmed = htmx.post(url("jobs-discard", "failed"), confirm_form(html))
    assert json.loads(confirmed["HX-Trigger"]) == {"sq:changed": {}}
    assert not Job.objects.filter(pk__in=chosen).exists()


def test_the_list_posts_its_selection_to_the_question(admin_client):
    """The list's bulk form carries the filters into the question, and so back."""
    make("failed", 1)
    page = admin_client.get(url("job-list", "failed") + "?queue=default").content.decode()
    assert hidden_fields(page, "bulk-form")["queue"] == ["default"]


@pytest.mark.parametrize("scope", ["selected", "all"])
def test_the_question_reads_a_bounded_number_of_queries(
    admin_client, scope, django_assert_max_num_queries
):
    ids = make("failed", 30)
    make("ready", 5)
    data = {"scope": scope, "ids": ids} if scope == "selected" else {"scope": "all"}
    # Session and user (2), then selected: the ids still listed (1); all: the count and
    # the first ids (2). None per job listed.
    with django_assert_max_num_queries(3 if scope == "selected" else 4):
        html = admin_client.post(url("jobs-discard", "failed"), data).content.decode()
    assert 'id="sq-confirm-form"' in html and "Discard 30 jobs?" in html
