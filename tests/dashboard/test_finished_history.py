"""A job moved to the finished history (partition_finished_by, PostgreSQL) still has its
page: read-only, as the Archive shows its rows, in a bounded number of queries. Where
nothing moves (MariaDB, SQLite, or the setting off) a cleared job's page says it is gone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

import steady_queue
from steady_queue.labels import labels
from steady_queue.models import FinishedHistory, Job
from steady_queue.retention.pruning import prune
from steady_queue.testing import run_ready_jobs
from tests import tasks
from tests.encryption.conftest import CARD
from tests.tasks import encrypted

POSTGRES = connection.vendor == "postgresql"
#: The page of a moved job: the session and user, the jobs table's miss, the history row.
HISTORY_PAGE = 6


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def moved(result) -> int:
    """Run, age and prune so that the job of ``result`` moves (or, off PostgreSQL, is
    deleted: older than the default rule keeps)."""
    run_ready_jobs()
    age = timedelta(minutes=10) if POSTGRES else timedelta(days=2)
    Job.objects.filter(pk=result.id).update(finished_at=timezone.now() - age)
    prune(pause=0)
    assert not Job.objects.filter(pk=result.id).exists()
    return int(result.id)


@pytest.fixture(autouse=True)
def _partitioned(monkeypatch):
    monkeypatch.setattr(steady_queue, "partition_finished_by", "day")


@pytest.mark.skipif(not POSTGRES, reason="the partitioned history is PostgreSQL's")
def test_a_moved_jobs_page_shows_its_history_row_read_only(
    admin_client, django_assert_max_num_queries
):
    with labels("tenant:7"):
        pk = moved(tasks.add.enqueue(20, 22))
    assert FinishedHistory.objects.filter(pk=pk).exists()

    with django_assert_max_num_queries(HISTORY_PAGE):
        response = admin_client.get(url("job-detail", pk))

    assert response.status_code == 200
    html = response.text
    assert 'id="history-badge"' in html and "tests.tasks.add" in html
    assert 'id="history-return-value">42<' in html and "tenant:7" in html
    assert "&quot;args&quot;" in html and "20" in html  # its arguments, masked as usual
    assert "archive-restore" not in html  # nothing to act on
    retention = admin_client.get(url("retention")).text
    assert "succeeded jobs moved to history after 5 minutes" in retention
    assert "jobs moved to history" in retention


@pytest.mark.skipif(not POSTGRES, reason="the partitioned history is PostgreSQL's")
def test_a_moved_encrypted_jobs_page_shows_encrypted(admin_client):
    pk = moved(encrypted.charge.enqueue(CARD, amount=3))
    html = admin_client.get(url("job-detail", pk)).text
    assert CARD not in html and "paid with" not in html and "encrypted" in html


@pytest.mark.skipif(POSTGRES, reason="PostgreSQL moves it to history")
def test_off_postgresql_a_cleared_jobs_page_is_a_404(admin_client):
    pk = moved(tasks.add.enqueue(1, 2))
    assert admin_client.get(url("job-detail", pk)).status_code == 404


#: The history list: the session and user, then one keyset page.
HISTORY_LIST = 4


def history_rows(count: int) -> list[int]:
    """``count`` jobs straight into history, a minute apart (newest first): their ids."""
    from steady_queue.retention import history

    now = timezone.now()
    history.ensure_partitions({history.day_of(now - timedelta(minutes=n)) for n in range(count)})
    rows = [
        FinishedHistory(
            id=10**9 + n,
            queue_name="default",
            task_path="tests.tasks.add",
            arguments={"args": [n, 1], "kwargs": {}},
            created_at=now - timedelta(minutes=n + 1),
            finished_at=now - timedelta(minutes=n),
        )
        for n in range(count)
    ]
    FinishedHistory.objects.bulk_create(rows)
    return [row.pk for row in rows]


@pytest.mark.skipif(not POSTGRES, reason="the partitioned history is PostgreSQL's")
def test_the_history_list_pages_newest_first_in_bounded_queries(
    admin_client, django_assert_max_num_queries
):
    ids = history_rows(55)
    with django_assert_max_num_queries(HISTORY_LIST):
        first = admin_client.get(url("history-list"))
    assert first.status_code == 200
    html = first.text
    assert f'id="history-row-{ids[0]}"' in html and f'id="history-row-{ids[49]}"' in html
    assert f'id="history-row-{ids[50]}"' not in html and 'rel="next"' in html
    assert html.index(f"history-row-{ids[0]}") < html.index(f"history-row-{ids[1]}")
    next_link = html.split('rel="next"')[0].rsplit('href="', 1)[1].split('"')[0]
    with django_assert_max_num_queries(HISTORY_LIST):
        second = admin_client.get(next_link.replace("&amp;", "&")).text
    assert f'id="history-row-{ids[50]}"' in second and f'id="history-row-{ids[54]}"' in second
    assert f'id="history-row-{ids[49]}"' not in second

    finished_list = admin_client.get(url("job-list", "finished")).text
    assert 'id="history-link"' in finished_list


@pytest.mark.skipif(POSTGRES, reason="PostgreSQL has the history")
def test_off_postgresql_the_history_list_says_it_is_off(admin_client):
    html = admin_client.get(url("history-list")).text
    assert 'id="history-off"' in html
    assert 'id="history-link"' not in admin_client.get(url("job-list", "finished")).text
