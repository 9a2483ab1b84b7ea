"""The Tasks page: per-task figures read from the rollup rows, numbers checked by hand."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import TaskRollup
from steady_queue.models.task_rollup import BUCKETS, hour_of
from steady_queue_dashboard.adapter.task_stats import WINDOWS, quantile, task_stats

URL = reverse("steady_queue_dashboard:tasks")


def bucket(seconds: float) -> str:
    return f"run_le_{BUCKETS.index(seconds)}"


def rollup(task: str, hours_ago: int, queue: str = "default", **fields) -> TaskRollup:
    period = hour_of(timezone.now()) - timedelta(hours=hours_ago)
    return TaskRollup.objects.create(task_path=task, queue_name=queue, period=period, **fields)


@pytest.fixture
def history(db):
    """app.charge: 100 runs this hour, 10 an hour for 5 hours before; app.mail: 3 runs a day ago."""
    rollup(
        "app.charge",
        0,
        runs=100,
        succeeded=90,
        failed=5,
        retried=5,
        run_max=4.0,
        wait_max=0.2,
        **{bucket(0.1): 50, bucket(0.5): 40, bucket(5.0): 10},
        wait_le_0=100,
    )
    for hours_ago in range(1, 6):
        rollup("app.charge", hours_ago, runs=10, succeeded=10, run_max=0.1, **{bucket(0.1): 10})
    rollup("app.mail", 20, queue="low", runs=3, succeeded=3, run_max=1.0, **{bucket(1.0): 3})
    TaskRollup.objects.create(  # all-time rows are no window's
        task_path="app.charge", queue_name="default", period=TaskRollup.all_time(), runs=10**6
    )


def test_quantiles_interpolate_inside_the_bucket_and_never_pass_the_maximum():
    counts = [0] * len(BUCKETS)
    counts[BUCKETS.index(0.1)], counts[BUCKETS.index(0.5)] = 50, 50
    # The 50th of 100 is the last of (0.05, 0.1]; the 75th is halfway into (0.25, 0.5].
    assert quantile(0.5, counts, 100, 0.5) == pytest.approx(0.1)
    assert quantile(0.75, counts, 100, 0.5) == pytest.approx(0.375)
    assert quantile(0.95, counts, 100, 0.3) == 0.3  # capped at the exact maximum
    assert quantile(0.5, [0] * len(BUCKETS), 4, 3600.0) == 3600.0  # all past the last bound


def test_figures_over_the_last_day(history):
    charge, mail = task_stats(WINDOWS["day"])
    assert (charge.task_path, charge.runs, charge.succeeded, charge.failed) == (
        "app.charge",
        150,
        140,
        5,
    )
    assert charge.retried == 5
    assert charge.failure_rate == pytest.approx(5 / 145)
    # Over the span since its first runs (five hours ago), not the whole day.
    elapsed = (timezone.now() - (hour_of(timezone.now()) - timedelta(hours=5))).total_seconds()
    assert charge.runs_per_hour == pytest.approx(150 / (elapsed / 3600), rel=0.01)
    # 100 of 150 in (0.05, 0.1]: the 75th run is there; the 143rd (95 %) in (2.5, 5].
    assert charge.run.p50 == pytest.approx(0.05 + 0.05 * 75 / 100)
    assert charge.run.p95 == pytest.approx(2.5 + 2.5 * (142.5 - 140) / 10)
    assert charge.run.max == 4.0
    # 100 waits in [0, 0.005], the 50 others (no bucket given) past the last: +Inf.
    assert charge.wait.max == 0.2 and charge.wait.p50 == pytest.approx(0.005 * 75 / 100)
    assert charge.wait.p95 == 0.2
    assert charge.hourly == [0] * 18 + [10] * 5 + [100]
    assert (mail.task_path, mail.runs, mail.failure_rate) == ("app.mail", 3, 0.0)
    assert mail.hourly[3] == 3 and sum(mail.hourly) == 3


def test_the_last_hour_and_a_queue(history):
    (charge,) = task_stats(WINDOWS["hour"])  # this hour and the one before: 100 + 10
    assert charge.runs == 110
    (mail,) = task_stats(WINDOWS["day"], queue="low")
    assert mail.task_path == "app.mail"
    assert task_stats(WINDOWS["hour"], queue="low") == []


def test_the_page_shows_the_figures_with_sparklines(admin_client, history):
    page = admin_client.get(URL).content.decode()
    assert "app.charge" in page and "app.mail" in page
    assert "3.4 %" in page  # 5 of 145
    assert "4.0 s" in page  # the maximum run
    points = re.findall(r'<polyline[^>]*points="([^"]+)"', page)
    assert len(points) == 2 and all(len(p.split()) == 24 for p in points)
    finished = reverse("steady_queue_dashboard:job-list", args=["finished"])
    assert f'href="{finished}?task=app.charge"' in page

    hour = admin_client.get(URL, {"window": "hour"}).content.decode()
    assert "app.charge" in hour and "app.mail" not in hour
    low = admin_client.get(URL, {"window": "day", "queue": "low"}).content.decode()
    assert "app.mail" in low and "app.charge" not in low


@pytest.mark.parametrize(
    "query", [{"window": "bogus"}, {"window": ""}, {"queue": "\x00"}, {"queue": "x" * 2000}]
)
def test_odd_parameters_show_a_page(admin_client, history, query):
    assert admin_client.get(URL, query).status_code == 200


def test_empty_state(admin_client, db):
    page = admin_client.get(URL).content.decode()
    assert "No job ended in this window" in page


def test_queries_do_not_grow_with_tasks_or_hours(admin_client, history, django_assert_num_queries):
    with django_assert_num_queries(7) as first:  # + the paused tasks
        admin_client.get(URL)
    for n in range(40):
        for hours_ago in range(0, 24, 3):
            rollup(f"app.task_{n}", hours_ago, runs=2, succeeded=2, **{bucket(0.1): 2})
    with django_assert_num_queries(len(first.captured_queries)):
        assert "app.task_39" in admin_client.get(URL).content.decode()


def test_cancelled_and_discarded_jobs_are_shown_apart_from_failures(admin_client, db):
    """Issue 25, item 11: cancels and discards have their own columns, outside the rate."""
    rollup("app.sync", 0, runs=12, succeeded=10, failed=2, cancelled=3, discarded=4)
    (sync,) = task_stats(WINDOWS["day"])
    assert (sync.failed, sync.cancelled, sync.discarded) == (2, 3, 4)
    assert sync.failure_rate == pytest.approx(2 / 12)  # cancels are no failures

    page = admin_client.get(URL).content.decode()
    headers = re.findall(r"<th[^>]*>([^<]+)</th>", page)
    assert headers[headers.index("Retried") + 1 : headers.index("Retried") + 3] == [
        "Cancelled",
        "Discarded",
    ]
    cancelled = reverse("steady_queue_dashboard:job-list", args=["cancelled"])
    assert f'<a href="{cancelled}?task=app.sync">3</a>' in page
    cells = dict(re.findall(r'<td class="num" data-label="([^"]+)">([^<]*)</td>', page))
    assert cells["Discarded"] == "4"
