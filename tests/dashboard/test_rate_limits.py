"""Rate limits on the dashboard: the Throttled list, its actions, the Rate limits page."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import Job, RateLimitBucket, RateLimitSlot, ThrottledExecution
from steady_queue.task_options.rate_limits import bucket_key
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from steady_queue_dashboard.views import rate_limits as rate_limits_view
from tests.tasks import dashboard as tasks

from .page_forms import ask_then_confirm, confirm_form
from .test_queries import BUDGET

pytestmark = pytest.mark.django_db

PARTNER = tasks.call_partner.module_path
EXPORT = tasks.export_all.module_path


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def page(client, name: str, *args, query: str = "") -> str:
    response = client.get(url(name, *args) + query)
    assert response.status_code == 200
    return response.content.decode()


def listed(client, query: str = "") -> list[int]:
    html = page(client, "job-list", "throttled", query=query)
    return [int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html)]


def window(task_path: str, key: str) -> str:
    return "?" + urlencode({"task": task_path, "key": key})


def state(job_id) -> str:
    job = Job.objects.with_execution().filter(pk=job_id).first()
    return job.state if job else "gone"


def throttled_for(account_id: int, *, extra: int = 1, priority: int = 0) -> list[int]:
    """Fill account ``account_id``'s window (2 a minute), then throttle ``extra`` more jobs."""
    for _ in range(2):
        tasks.call_partner.enqueue(account_id)
    partner = tasks.call_partner.using(priority=priority)
    return [int(partner.enqueue(account_id).id) for _ in range(extra)]


def messages_of(response) -> list[str]:
    return [str(message) for message in response.wsgi_request._messages]


# The Throttled list


def test_throttled_jobs_have_their_own_list_with_priority_key_and_next_room(admin_client):
    (job_id,) = throttled_for(7, priority=5)
    next_release_at = RateLimitBucket.objects.get(key=bucket_key(PARTNER, "account-7"))
    next_release_at = next_release_at.next_release_at

    html = page(admin_client, "job-list", "throttled")

    assert re.findall(r'id="job-row-(\d+)"', html) == [str(job_id)]
    row = html[html.index(f'id="job-row-{job_id}"') :]
    assert '<td class="num" data-label="Priority">5</td>' in row
    link = f"/jobs/throttled/?task={PARTNER}&amp;key=account-7"
    assert f'href="{link}"' in row and ">account-7</a>" in row
    assert f'<time datetime="{next_release_at.isoformat()}"' in row
    assert "Cancel" in row and "Discard" in row


def test_throttled_jobs_are_counted_in_the_tabs_and_on_the_overview(admin_client):
    throttled_for(1, extra=3)
    throttled_for(2, extra=1)
    assert ThrottledExecution.objects.count() == 4

    tabs = page(admin_client, "job-list", "ready")
    assert re.search(r'href="/jobs/throttled/">Throttled <span class="count">4</span>', tabs)
    assert re.search(r'href="/jobs/ready/"[^>]*>Ready <span class="count">4</span>', tabs)
    overview = page(admin_client, "overview")
    card = overview[overview.index('class="card status-throttled"') :]
    assert re.match(r'[^>]*>\s*<span class="card-value">4</span>', card)


def test_the_key_filter_shows_one_window_and_the_task_narrows_a_shared_key(admin_client):
    first = throttled_for(1, extra=2)
    second = throttled_for(2)
    tasks.export_all.enqueue(0)
    exports = [int(tasks.export_all.enqueue(n).id) for n in (1, 2)]

    assert listed(admin_client, "?key=account-1") == first
    assert listed(admin_client, window(PARTNER, "account-2")) == second
    assert listed(admin_client, window(EXPORT, "*")) == exports
    assert listed(admin_client, window(PARTNER, "*")) == []
    assert listed(admin_client, "?key=account-3") == []
    html = page(admin_client, "job-list", "throttled", query="?key=account-1")
    assert "Rate limit key" in html


def test_within_a_window_jobs_are_listed_in_the_order_they_will_be_released(admin_client):
    low = throttled_for(3, priority=-5)
    high = int(tasks.call_partner.using(priority=10).enqueue(3).id)
    assert listed(admin_client, "?key=account-3") == [high, *low]


def test_other_lists_have_no_rate_limit_key_filter(admin_client):
    throttled_for(1)
    html = page(admin_client, "job-list", "ready", query="?key=account-1")
    assert "Rate limit key" not in html
    assert html.count('id="job-row-') == 2  # the parameter is not a filter there


@pytest.mark.parametrize(
    "value",
    ["x" * 300, "\x00", "account-1\x00", "é☃💥", "%", "_", "' OR 1=1 --", "*", " ", "a" * 5000],
)
def test_odd_key_filter_values_never_fail(admin_client, value):
    throttled_for(1)
    response = admin_client.get(url("job-list", "throttled"), {"key": value, "task": value})
    assert response.status_code == 200
    htmx = admin_client.get(url("job-list", "throttled"), {"key": value}, HTTP_HX_REQUEST="true")
    assert htmx.status_code == 200


def test_a_nul_in_the_key_is_refused_as_a_filter_not_applied_widening(admin_client):
    (job_id,) = throttled_for(1)
    html = page(admin_client, "job-list", "throttled", query="?key=account-1%00")
    assert "Some filters are not valid" in html
    response = admin_client.post(
        url("jobs-discard", "throttled"), {"scope": "all", "key": "account-1\x00"}
    )
    assert "nothing was done" in " ".join(messages_of(response))
    assert state(job_id) == "throttled"


# Actions on throttled jobs


def test_discarding_a_throttled_job_asks_first_then_deletes_it_and_audits(admin_client):
    (job_id,) = throttled_for(1)

    asked = admin_client.post(url("job-discard", job_id)).content.decode()
    assert f"Discard job #{job_id}" in asked and state(job_id) == "throttled"
    response = admin_client.post(url("job-discard", job_id), confirm_form(asked))

    assert messages_of(response) == [f"Job {job_id} was discarded."]
    assert state(job_id) == "gone"
    assert not ThrottledExecution.objects.exists()
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target, entry.affected) == ("discard", f"job {job_id}", 1)


def test_cancelling_a_throttled_job_asks_first_then_ends_it_failed(admin_client):
    (job_id,) = throttled_for(1)

    asked = admin_client.post(url("job-cancel", job_id)).content.decode()
    assert f"Cancel job #{job_id}" in asked and state(job_id) == "throttled"
    admin_client.post(url("job-cancel", job_id), confirm_form(asked))

    assert state(job_id) == "failed"
    failed = Job.objects.get(pk=job_id).failed_execution
    assert failed.exception_class == "steady_queue.exceptions.JobCancelled"
    assert AuditEntry.objects.get().action == "cancel"


def test_cancel_all_matching_cancels_only_the_filtered_windows_jobs(admin_client):
    cancelled = throttled_for(1, extra=3)
    kept = throttled_for(2, extra=2)
    action = url("jobs-cancel", "throttled")

    asked = admin_client.post(action, {"scope": "all", "key": "account-1"}).content.decode()
    assert "Cancel 3 jobs" in asked and "Rate limit key=account-1" in asked
    assert [state(pk) for pk in cancelled] == ["throttled"] * 3
    response = admin_client.post(action, confirm_form(asked))

    assert "3 jobs were cancelled" in " ".join(messages_of(response))
    assert [state(pk) for pk in cancelled] == ["failed"] * 3
    assert [state(pk) for pk in kept] == ["throttled"] * 2
    ready = Job.objects.filter(ready_execution__isnull=False).count()
    assert ready == 4  # the jobs that had room stay ready
    entry = AuditEntry.objects.get()
    assert entry.action == "cancel all" and entry.affected == 3
    assert entry.target == "throttled jobs where Rate limit key=account-1"


def test_discard_selected_touches_only_selected_throttled_jobs(admin_client):
    chosen, left = throttled_for(1, extra=2)
    ready = int(Job.objects.filter(ready_execution__isnull=False).values_list("pk", flat=True)[0])

    action = url("jobs-discard", "throttled")
    asked = admin_client.post(action, {"scope": "selected", "ids": [chosen, ready]})
    html = asked.content.decode()
    assert "Discard 1 job?" in html and f"#{chosen}<" in html and f"#{ready}<" not in html
    assert "1 other selected job is no longer throttled" in html
    response = admin_client.post(action, confirm_form(html))

    assert messages_of(response) == ["1 job was discarded."]
    assert (state(chosen), state(left), state(ready)) == ("gone", "throttled", "ready")


def test_a_throttled_list_action_keeps_to_the_filters_the_operator_saw(admin_client):
    shown = throttled_for(1)
    hidden = throttled_for(2)
    html = page(admin_client, "job-list", "throttled", query="?key=account-1")
    assert '<input type="hidden" name="key" value="account-1">' in html

    response = ask_then_confirm(
        admin_client,
        url("jobs-discard", "throttled"),
        {"scope": "selected", "key": "account-1", "ids": shown + hidden},
    )

    assert "1 job was discarded" in " ".join(messages_of(response))
    assert (state(shown[0]), state(hidden[0])) == ("gone", "throttled")


def test_staff_without_the_permission_can_neither_see_nor_use_the_actions(viewer_client):
    (job_id,) = throttled_for(1)
    html = page(viewer_client, "job-list", "throttled")
    assert f'id="job-row-{job_id}"' in html and "hx-post" not in html
    for action in ("jobs-discard", "jobs-cancel"):
        data = {"scope": "selected", "ids": [job_id]}
        assert viewer_client.post(url(action, "throttled"), data).status_code == 403
    assert viewer_client.post(url("job-cancel", job_id)).status_code == 403
    assert state(job_id) == "throttled"


def test_throttled_jobs_cannot_be_retried_or_released_in_bulk(admin_client):
    (job_id,) = throttled_for(1)
    for action in ("jobs-retry", "jobs-release", "jobs-dispatch"):
        data = {"scope": "selected", "ids": [job_id]}
        assert admin_client.post(url(action, "throttled"), data).status_code == 404
    assert state(job_id) == "throttled"


# The Rate limits page


def test_the_rate_limits_page_shows_each_windows_limit_use_and_waiting_jobs(admin_client):
    throttled_for(1, extra=2)
    throttled_for(2, extra=0)
    tasks.export_all.enqueue(1)
    tasks.export_all.enqueue(2)
    run_ready_jobs()  # the reservations become starts: still in use

    html = page(admin_client, "rate-limits")

    rows = re.findall(r"<tr><td class=\"mono\" data-label=\"Task\">(.*?)</tr>", html, re.DOTALL)
    assert len(rows) == 3
    # Windows where jobs wait come first.
    assert {PARTNER in rows[0] + rows[1], EXPORT in rows[0] + rows[1]} == {True}
    account_1 = next(row for row in rows if "account-1" in row)
    assert "2 per 1 min<" in account_1 and '"badge warning">2 / 2<' in account_1
    link = f"/jobs/throttled/?task={PARTNER}&amp;key=account-1"
    assert f'<a href="{link}">2</a>' in account_1 and "<time datetime=" in account_1
    export = next(row for row in rows if EXPORT in row)
    assert "(whole task)" in export and "1 per 1 h<" in export
    assert f'<a href="/jobs/throttled/?task={EXPORT}&amp;key=%2A">1</a>' in export
    account_2 = next(row for row in rows if "account-2" in row)
    assert '<td class="num" data-label="Throttled jobs">0</td>' in account_2 and "—" in account_2


def test_in_use_counts_only_the_starts_within_the_last_period(admin_client):
    throttled_for(1, extra=0)
    run_ready_jobs()
    slots = RateLimitSlot.objects.filter(bucket_id=bucket_key(PARTNER, "account-1"))
    first = slots.order_by("pk").first()
    slots.filter(pk=first.pk).update(started_at=timezone.now() - timedelta(seconds=61))

    html = page(admin_client, "rate-limits")

    assert '<td class="num" data-label="In use">1 / 2</td>' in html
    slots.update(started_at=timezone.now() - timedelta(minutes=5))
    assert '<td class="num" data-label="In use">0 / 2</td>' in page(admin_client, "rate-limits")


def test_the_rate_limits_page_says_when_no_window_exists(admin_client):
    html = page(admin_client, "rate-limits")
    assert "No rate limited task has run or waited yet." in html
    assert 'aria-current="page">Rate limits</a>' in html
    fragment = admin_client.get(url("rate-limits"), HTTP_HX_REQUEST="true").content.decode()
    assert fragment.startswith('<div id="rate-limit-table"') and "<html" not in fragment


def test_many_windows_are_capped_waiting_ones_first(admin_client, monkeypatch):
    monkeypatch.setattr(rate_limits_view, "SHOWN_WINDOWS", 3)
    for account_id in range(4):
        throttled_for(account_id, extra=0)
    throttled_for(9)

    html = page(admin_client, "rate-limits")

    assert html.count('<tr><td class="mono" data-label="Task">') == 3
    assert "Showing 3 of 5 windows" in html
    first_row = html[html.index("<tbody>") :].split("</tr>")[0]
    assert "account-9" in first_row


def test_the_rate_limits_page_reads_a_fixed_number_of_queries(
    admin_client, django_assert_max_num_queries
):
    for account_id in range(30):
        throttled_for(account_id, extra=account_id % 2)
    page(admin_client, "rate-limits")  # warm the task registry
    with django_assert_max_num_queries(BUDGET["rate-limits"]):
        html = page(admin_client, "rate-limits")
    assert html.count('<tr><td class="mono" data-label="Task">') == 30


def test_filtering_throttled_jobs_by_key_adds_no_query(admin_client, django_assert_max_num_queries):
    for account_id in range(10):
        throttled_for(account_id, extra=2)
    with django_assert_max_num_queries(BUDGET["throttled"]):
        assert len(listed(admin_client, "?key=account-3")) == 2
    # A task filter checks (once) whether it names a task in full, as on every list.
    with django_assert_max_num_queries(BUDGET["throttled"] + 1):
        assert len(listed(admin_client, window(PARTNER, "account-3"))) == 2


# A job's page


def test_a_throttled_jobs_page_shows_its_key_limit_and_when_its_window_has_room(admin_client):
    (job_id,) = throttled_for(4)
    bucket = RateLimitBucket.objects.get(key=bucket_key(PARTNER, "account-4"))

    html = page(admin_client, "job-detail", job_id)

    assert '<span class="badge state-throttled">Throttled</span>' in html
    assert "Rate limit key" in html and "2 per 1 min" in html
    assert f'href="/jobs/throttled/?task={PARTNER}&amp;key=account-4">account-4</a>' in html
    room = html[html.index("throttled, window has room") :]
    assert room.split("</dd>")[0].count(bucket.next_release_at.isoformat()) == 1
    assert "<strong>Throttled</strong>" in html  # on the timeline
    assert "Cancel" in html and "Discard" in html


def test_a_rate_limited_job_that_ran_shows_its_key_but_no_wait(admin_client):
    result = tasks.export_all.enqueue(1)
    run_ready_jobs()
    html = page(admin_client, "job-detail", result.id)
    assert "Rate limit key" in html and "(one window for the task)" in html
    assert "throttled, window has room" not in html


def test_a_job_without_a_rate_limit_shows_no_key(admin_client):
    result = tasks.record.enqueue(1)
    assert "Rate limit key" not in page(admin_client, "job-detail", result.id)


def test_a_throttled_jobs_page_costs_one_query_more(admin_client, django_assert_max_num_queries):
    (job_id,) = throttled_for(1)
    page(admin_client, "job-detail", job_id)  # warm the task registry
    with django_assert_max_num_queries(BUDGET["job"] + 1):
        page(admin_client, "job-detail", job_id)
