"""steady_queue.partition_finished_by = "day" on PostgreSQL: succeeded jobs move to the
day-partitioned finished history, where retention drops whole days; their results stay
readable. MariaDB and SQLite ignore the setting (tests/history/test_ignored.py)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

import steady_queue
from steady_queue.compat import TaskResultStatus, default_task_backend
from steady_queue.labels import labels
from steady_queue.models import FinishedHistory, Job, JobLabel, PruneTally
from steady_queue.models import prune_tally as kinds
from steady_queue.models.finished_history import TABLE
from steady_queue.results import labels_of, metadata_of
from steady_queue.retention import Retention, history
from steady_queue.retention.pruning import Pruning, prune
from steady_queue.testing import run_ready_jobs
from tests import tasks
from tests.encryption.conftest import CARD, raw_rows
from tests.retention.helpers import alive, finished
from tests.tasks import encrypted

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the partitioned history is PostgreSQL's"
)

DAY = timedelta(days=1)
MINUTE = timedelta(minutes=1)


@pytest.fixture(autouse=True)
def _partitioned(monkeypatch):
    monkeypatch.setattr(steady_queue, "partition_finished_by", "day")
    monkeypatch.setattr(steady_queue, "history_after", 5 * MINUTE)


def in_history(*ids: int) -> set[int]:
    return set(FinishedHistory.objects.filter(pk__in=ids).values_list("pk", flat=True))


@pytest.mark.django_db
def test_a_pass_creates_the_partitions_of_today_and_the_next_two_days_once():
    prune(pause=0)
    today = history.day_of(timezone.now())
    ahead = {today + timedelta(days=n) for n in range(3)}
    assert ahead <= history.partitions().keys()
    assert history.prepare(timezone.now()) == []  # idempotent: nothing left to create


@pytest.mark.django_db
def test_a_moved_job_keeps_its_result_labels_and_metadata(django_assert_max_num_queries):
    with labels("tenant:7", "export"):
        result = tasks.add.enqueue(2, 3)
    run_ready_jobs()
    Job.objects.filter(pk=result.id).update(
        finished_at=timezone.now() - 10 * MINUTE, metadata={"rows": 12}
    )
    [moved] = [r for r in prune(pause=0) if r.kind == kinds.HISTORY_MOVES]

    assert moved.removed == 1 and alive(int(result.id)) == set()
    assert not JobLabel.objects.filter(job_id=result.id).exists()  # deleted as pruning does
    with django_assert_max_num_queries(2):  # the jobs table's miss, then history by key
        found = default_task_backend.get_result(result.id)
    assert found.status == TaskResultStatus.SUCCESSFUL
    assert found.return_value == 5 and found.args == [2, 3]
    assert found.finished_at is not None and len(found.worker_ids) == 1
    assert labels_of(found) == ["tenant:7", "export"]
    assert metadata_of(found) == {"rows": 12}
    result.refresh()  # Django's own refresh goes through get_result
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 5
    assert PruneTally.objects.filter(kind=kinds.HISTORY_MOVES, removed=1).exists()


@pytest.mark.django_db
def test_a_fresh_result_stays_in_the_jobs_table_until_history_after():
    fresh, old = finished(MINUTE), finished(10 * MINUTE)
    prune(pause=0)
    assert alive(fresh, old) == {fresh} and in_history(fresh, old) == {old}


@pytest.mark.django_db
def test_jobs_of_a_more_specific_rule_are_not_moved(monkeypatch):
    monkeypatch.setattr(
        steady_queue,
        "retention_rules",
        [
            Retention(task="tests.tasks.add", state="succeeded", keep=30 * DAY),
            Retention(queue="background", state="succeeded", keep=30 * DAY),
        ],
    )
    by_task = finished(10 * MINUTE, tasks.add, a=1, b=2)
    by_queue = finished(10 * MINUTE, queue="background")
    default = finished(10 * MINUTE)
    prune(pause=0)
    assert alive(by_task, by_queue, default) == {by_task, by_queue}
    assert in_history(by_task, by_queue, default) == {default}


@pytest.mark.django_db
def test_an_archiving_default_rule_archives_instead_of_moving(monkeypatch):
    monkeypatch.setattr(
        steady_queue, "retention_rules", [Retention(state="succeeded", keep=DAY, archive=True)]
    )
    job = finished(10 * MINUTE)
    prune(pause=0)
    assert alive(job) == {job} and in_history(job) == set()


@pytest.mark.django_db
def test_existing_finished_jobs_move_in_batches_over_the_steps():
    # The migration path: turned on over a plain table holding finished jobs of today,
    # and of days older than the rule keeps (those are deleted, as before).
    recent = [finished(timedelta(hours=hours)) for hours in (1, 2, 3, 4, 5)]
    too_old = finished(3 * DAY)
    pruning = Pruning(batch_size=2)
    steps = 0
    while pruning.step():
        steps += 1
    assert alive(*recent, too_old) == set()
    assert in_history(*recent, too_old) == set(recent)
    assert steps >= 4  # 1 delete batch, then 3 batches of at most 2 moves


@pytest.mark.django_db
def test_a_partition_is_dropped_once_its_whole_day_is_older_than_kept():
    now = timezone.now()
    old_day, yesterday = history.day_of(now - 3 * DAY), history.day_of(now - DAY)
    history.ensure_partitions([old_day, yesterday])
    for pk, day in ((10**12, old_day), (10**12 + 1, yesterday)):
        at = history.day_start(day) + timedelta(hours=12)
        FinishedHistory.objects.create(
            id=pk, queue_name="default", task_path="tests.tasks.noop", created_at=at, finished_at=at
        )
    planned = {r.kind: r.removed for r in Pruning().dry_run()}
    assert planned[kinds.HISTORY_PARTITIONS] == 1  # the old day's row, counted, not dropped
    assert old_day in history.partitions()

    tallies = [r for r in prune(pause=0) if r.kind == kinds.HISTORY_PARTITIONS]

    assert [t.removed for t in tallies] == [1]
    assert old_day not in history.partitions() and yesterday in history.partitions()
    assert in_history(10**12, 10**12 + 1) == {10**12 + 1}
    assert PruneTally.objects.filter(kind=kinds.HISTORY_PARTITIONS, removed=1).exists()


@pytest.mark.django_db
def test_history_kept_for_ever_is_never_dropped(monkeypatch):
    monkeypatch.setattr(steady_queue, "clear_finished_jobs_after", None)
    old_day = history.day_of(timezone.now() - 30 * DAY)
    history.ensure_partitions([old_day])
    prune(pause=0)
    assert old_day in history.partitions()


@pytest.mark.django_db
def test_an_encrypted_job_stays_encrypted_in_history():
    result = encrypted.charge.enqueue(CARD, amount=3)
    run_ready_jobs()
    Job.objects.filter(pk=result.id).update(finished_at=timezone.now() - 10 * MINUTE)
    prune(pause=0)

    assert in_history(int(result.id)) == {int(result.id)}
    stored = raw_rows(TABLE, "id = %s", [int(result.id)])
    assert CARD not in stored and "amount" not in stored
    found = default_task_backend.get_result(result.id)
    assert found.args == [CARD] and found.kwargs == {"amount": 3}


@pytest.mark.django_db
def test_turned_off_history_stays_readable_and_nothing_new_moves(monkeypatch):
    moved = finished(10 * MINUTE)
    prune(pause=0)
    monkeypatch.setattr(steady_queue, "partition_finished_by", None)
    later = finished(10 * MINUTE)
    prune(pause=0)
    assert alive(moved, later) == {later}
    assert default_task_backend.get_result(str(moved)).status == TaskResultStatus.SUCCESSFUL


@pytest.fixture
def history_emptied():
    """A transactional test's history rows outlive its flush (Django truncates only the
    tables it manages): removed at the end, so that no later test sees them."""
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {TABLE}")


@pytest.mark.django_db
def test_a_dry_run_counts_the_moves_and_creates_no_partition():
    job = finished(10 * MINUTE)
    before = history.partitions()
    planned = {r.kind: r.removed for r in Pruning().dry_run()}
    assert planned[kinds.HISTORY_MOVES] == 1
    assert history.partitions() == before and alive(job) == {job}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("history_emptied")
def test_a_held_job_is_skipped_and_a_claim_is_never_blocked_by_a_move():
    held, free = finished(10 * MINUTE), finished(10 * MINUTE)
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:  # an operator's action holding the job's row
        try:
            with transaction.atomic():
                list(Job.objects.filter(pk=held).select_for_update())
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(10)
    try:
        started = time.monotonic()
        prune(pause=0)
        took = time.monotonic() - started
    finally:
        release.set()
        holder.join(10)
    assert took < 5 and alive(held, free) == {held} and in_history(free) == {free}

    # A move's transaction open (its jobs locked, copied, deleted): a worker claims and
    # runs a ready job meanwhile.
    waiting = finished(10 * MINUTE)
    moving, done = threading.Event(), threading.Event()

    def move() -> None:
        try:
            with transaction.atomic():
                rows = Job.objects.filter(finished_at__isnull=False)
                history._move(rows, [waiting])
                moving.set()
                done.wait(30)
        finally:
            connection.close()

    mover = threading.Thread(target=move)
    mover.start()
    assert moving.wait(10)
    try:
        ready = tasks.add.enqueue(1, 1)
        started = time.monotonic()
        run_ready_jobs()
        took = time.monotonic() - started
        assert default_task_backend.get_result(ready.id).return_value == 2
    finally:
        done.set()
        mover.join(10)
    assert took < 5 and in_history(waiting) == {waiting}
