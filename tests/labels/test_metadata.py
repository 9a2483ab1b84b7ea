"""``steady_queue.context.set_metadata``: JSON merged into ``Job.metadata``, key by key,
committed at once; refused (nothing changed) when not JSON or past 64 KB."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from datetime import datetime

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from steady_queue.compat import TaskContext, TaskResultStatus
from steady_queue.context import aset_metadata, set_metadata
from steady_queue.exceptions import InvalidMetadata
from steady_queue.models import Job
from steady_queue.models.job.annotated import MAX_BYTES
from steady_queue.results import metadata_of
from steady_queue.testing import run_ready_jobs
from tests.tasks import labelled as t

pytestmark = pytest.mark.django_db


def context_of(result) -> TaskContext:
    return TaskContext(task_result=result)


def metadata(result) -> dict:
    return Job.objects.get(pk=result.id).metadata


def test_a_new_job_has_empty_metadata():
    assert metadata(t.plain.enqueue()) == {}


def test_a_task_merges_its_metadata_key_by_key():
    result = t.with_metadata.enqueue(rows=1200, source="s3://bucket/rows.csv")
    [done] = run_ready_jobs()
    assert done.status == TaskResultStatus.SUCCESSFUL
    expected = {"rows_done": 1200, "source": "s3://bucket/rows.csv"}
    assert done.return_value == expected  # set_metadata returns the whole
    assert metadata(result) == expected
    assert metadata_of(result) == expected


def test_a_later_call_replaces_only_the_keys_it_gives():
    result = t.plain.enqueue()
    context = context_of(result)
    set_metadata(context, rows=1, stage="a", nested={"x": 1})
    merged = set_metadata(context, rows=2, nested={"y": 2})
    assert merged == metadata(result) == {"rows": 2, "stage": "a", "nested": {"y": 2}}


@pytest.mark.parametrize(
    "bad",
    [datetime(2026, 1, 1), {1, 2}, object(), math.nan, math.inf],
    ids=["datetime", "set", "object", "nan", "infinity"],
)
def test_a_value_that_is_not_json_is_refused_and_nothing_changes(bad):
    result = t.plain.enqueue()
    set_metadata(context_of(result), kept=True)
    with pytest.raises(InvalidMetadata, match="must be JSON"):
        set_metadata(context_of(result), fine=1, bad=bad)
    assert metadata(result) == {"kept": True}


def test_tuples_are_stored_as_lists_as_json_has_them():
    result = t.plain.enqueue()
    assert set_metadata(context_of(result), pair=(1, 2)) == {"pair": [1, 2]}
    assert metadata(result) == {"pair": [1, 2]}


def _filler(size: int) -> str:
    # {"blob":"..."} is 11 bytes around the string.
    return "x" * (size - len(json.dumps({"blob": ""}, separators=(",", ":"))))


def test_metadata_of_exactly_the_most_bytes_is_kept():
    result = t.plain.enqueue()
    set_metadata(context_of(result), blob=_filler(MAX_BYTES))
    assert len(metadata(result)["blob"]) == len(_filler(MAX_BYTES))


def test_metadata_past_the_most_bytes_is_refused_and_nothing_changes():
    result = t.plain.enqueue()
    set_metadata(context_of(result), blob=_filler(MAX_BYTES))
    with pytest.raises(InvalidMetadata, match=f"at most {MAX_BYTES} bytes"):
        set_metadata(context_of(result), more=1)  # the whole would pass the limit
    other = t.plain.enqueue()
    with pytest.raises(InvalidMetadata):
        set_metadata(context_of(other), blob=_filler(MAX_BYTES + 1))
    assert metadata(other) == {}
    assert len(metadata(result)["blob"]) == len(_filler(MAX_BYTES))


def test_bytes_are_counted_in_utf8():
    result = t.plain.enqueue()
    with pytest.raises(InvalidMetadata):
        set_metadata(context_of(result), blob="é" * (MAX_BYTES // 2))  # 2 bytes each


@pytest.mark.django_db(transaction=True)
def test_the_async_form_merges_too():
    result = t.plain.enqueue()

    async def merge():
        try:
            await aset_metadata(context_of(result), stage="async")
        finally:  # the connection of sync_to_async's thread
            await sync_to_async(connections.close_all, thread_sensitive=True)()

    asyncio.run(merge())
    assert metadata(result) == {"stage": "async"}


@pytest.mark.django_db(transaction=True)
def test_metadata_is_visible_from_another_connection_while_the_job_runs():
    result = t.waits_with_metadata.enqueue("rows.csv")

    def work():
        try:
            run_ready_jobs()
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    seen = None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        job = Job.objects.with_execution().get(pk=result.id)
        if job.metadata:
            seen = (job.state, job.metadata)
            break
        time.sleep(0.02)
    # Tell the task it was seen (it waits for a progress value), then let it end.
    Job.objects.filter(pk=result.id).update(progress={"current": 1, "total": 1, "message": ""})
    thread.join(20)
    assert seen == ("running", {"stage": "reading", "source": "rows.csv"})
    assert Job.objects.get(pk=result.id).return_value == 1


@pytest.mark.django_db(transaction=True)
def test_merges_from_two_threads_at_once_both_land():
    result = t.plain.enqueue()
    barrier = threading.Barrier(8)

    def merge(index: int) -> None:
        try:
            barrier.wait(5)
            set_metadata(context_of(result), **{f"key{index}": index})
        finally:
            connections.close_all()

    threads = [threading.Thread(target=merge, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert metadata(result) == {f"key{i}": i for i in range(8)}
