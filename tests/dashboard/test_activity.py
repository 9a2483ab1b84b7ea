"""The overview's activity chart counts jobs per bucket from the time columns' indexes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from steady_queue.models import FailedExecution, Job
from steady_queue_dashboard import adapter, charts

pytestmark = pytest.mark.django_db

NOON = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def finished_at(*moments: datetime) -> None:
    Job.objects.bulk_create(
        Job(queue_name="default", task_path="tests.tasks.noop", finished_at=moment)
        for moment in moments
    )


def test_each_job_counts_in_the_bucket_that_holds_its_time():
    starts = [NOON, NOON + timedelta(minutes=15), NOON + timedelta(minutes=30)]
    quarter = timedelta(minutes=15)
    finished_at(
        NOON - timedelta(microseconds=1),  # before the first bucket
        NOON,  # a bucket includes its start...
        NOON + timedelta(minutes=14, seconds=59),
        NOON + quarter,  # ...and not its end
        NOON + timedelta(minutes=44, seconds=59),
        NOON + timedelta(minutes=45),  # after the last
    )
    failed = Job.objects.create(queue_name="default", task_path="tests.tasks.explode")
    execution = FailedExecution.objects.create(job=failed, exception_class="ValueError")
    FailedExecution.objects.filter(pk=execution.pk).update(created_at=NOON + quarter)

    counts = adapter.activity(starts, quarter)

    assert counts == {
        "finished": {starts[0]: 2, starts[1]: 1, starts[2]: 1},
        "failed": {starts[1]: 1},
    }


def test_a_day_is_one_query_per_table(django_assert_num_queries):
    span = charts.SPANS["day"]
    starts = charts.bucket_starts(NOON, span)
    finished_at(NOON - timedelta(hours=3, minutes=1), NOON - timedelta(hours=3, minutes=2))

    with django_assert_num_queries(2):
        counts = adapter.activity(starts, span.bucket)

    chart = charts.activity_chart(counts, span, starts)
    assert len(starts) == 96 and chart.total == {"finished": 2, "failed": 0}
    assert [bar.kind for bar in chart.bars] == ["finished"]  # both in one quarter hour
