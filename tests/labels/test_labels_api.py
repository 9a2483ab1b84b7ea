"""``steady_queue.labels.labels``: a task's static labels, and the labels of a block.

A job's labels are its task's, then those of every block open around the enqueue
(outermost first), each once. Bad labels are refused where they are given, and a job
whose labels add up to too many is refused at its enqueue, with nothing written.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from steady_queue.exceptions import InvalidLabels
from steady_queue.labels import MAX_LABELS, MAX_LENGTH, active_labels, labels, static_labels
from steady_queue.models import Job, JobLabel
from tests.tasks import labelled as t

pytestmark = pytest.mark.django_db


def labels_of(result) -> list[str]:
    return Job.objects.get(pk=result.id).labels


def indexed(result) -> set[str]:
    return set(JobLabel.objects.filter(job_id=result.id).values_list("label", flat=True))


def test_a_task_declares_static_labels_above_task():
    result = t.charge.enqueue(7)
    assert labels_of(result) == ["billing"]
    assert indexed(result) == {"billing"}


def test_a_task_without_labels_has_none_and_no_rows():
    result = t.plain.enqueue(1)
    assert labels_of(result) == []
    assert not JobLabel.objects.exists()


def test_the_block_labels_every_enqueue_inside_it_and_nothing_after():
    with labels("tenant:7", "import-42") as block:
        inside = t.charge.enqueue(7)
        also = t.plain.enqueue(2)
    after = t.plain.enqueue(3)
    assert block.names == ("tenant:7", "import-42")
    assert labels_of(inside) == ["billing", "tenant:7", "import-42"]
    assert labels_of(also) == ["tenant:7", "import-42"]
    assert labels_of(after) == []
    assert indexed(inside) == {"billing", "tenant:7", "import-42"}


def test_nested_blocks_add_up_outermost_first_each_label_once():
    with labels("tenant:7"):
        with labels("import-42", "tenant:7", "billing"):
            inner = t.charge.enqueue(1)
            assert active_labels() == ("tenant:7", "import-42", "billing")
        outer = t.charge.enqueue(2)
    assert labels_of(inner) == ["billing", "tenant:7", "import-42"]
    assert labels_of(outer) == ["billing", "tenant:7"]
    assert active_labels() == ()


def test_the_block_is_left_as_it_was_when_the_block_raises():
    with pytest.raises(RuntimeError), labels("tenant:7"):
        raise RuntimeError("boom")
    assert active_labels() == ()


def test_one_labels_object_can_be_entered_again_inside_itself():
    block = labels("a")
    with block, labels("b"), block:
        assert active_labels() == ("a", "b")
    assert active_labels() == ()


def test_each_thread_sees_only_its_own_blocks():
    barrier = threading.Barrier(2)
    seen: dict[str, tuple[str, ...]] = {}

    def work(name: str) -> None:
        with labels(f"thread:{name}"):
            barrier.wait(5)  # both blocks are open at once
            seen[name] = active_labels()
            barrier.wait(5)

    threads = [threading.Thread(target=work, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"a": ("thread:a",), "b": ("thread:b",)}
    assert active_labels() == ()


def test_one_labels_object_shared_by_threads_opens_a_block_in_each():
    shared = labels("shared")
    barrier = threading.Barrier(2)
    seen: dict[str, tuple[str, ...]] = {}
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            with labels(f"thread:{name}"), shared:
                barrier.wait(5)  # both inside the shared block at once
                seen[name] = active_labels()
                barrier.wait(5)
            seen[f"{name} after"] = active_labels()
        except BaseException as exc:  # an exit resetting the other thread's token
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert errors == []
    assert seen == {
        "a": ("thread:a", "shared"),
        "b": ("thread:b", "shared"),
        "a after": (),
        "b after": (),
    }


def test_each_asyncio_task_sees_only_its_own_blocks():
    async def one(name: str) -> tuple[str, ...]:
        with labels(f"task:{name}"):
            await asyncio.sleep(0.01)  # the other task runs meanwhile, its block open
            return active_labels()

    async def both():
        with labels("outer"):
            return await asyncio.gather(one("a"), one("b"))

    assert asyncio.run(both()) == [("outer", "task:a"), ("outer", "task:b")]


@pytest.mark.django_db(transaction=True)
def test_aenqueue_inside_a_block_carries_its_labels():
    async def enqueue():
        try:
            with labels("async"):
                return await t.charge.aenqueue(5)
        finally:  # the connection of sync_to_async's thread
            await sync_to_async(connections.close_all, thread_sensitive=True)()

    result = asyncio.run(enqueue())
    assert labels_of(result) == ["billing", "async"]
    assert indexed(result) == {"billing", "async"}


@pytest.mark.parametrize(
    "bad",
    ["", None, 7, b"bytes", "x" * (MAX_LENGTH + 1)],
    ids=["empty", "none", "int", "bytes", "too-long"],
)
def test_a_bad_label_is_refused_where_it_is_given(bad):
    with pytest.raises(InvalidLabels):
        labels(bad)
    with pytest.raises(InvalidLabels):
        labels("fine", bad)(t.plain)
    assert not Job.objects.exists()


def test_a_label_of_the_longest_length_is_fine():
    with labels("x" * MAX_LENGTH):
        result = t.plain.enqueue()
    assert labels_of(result) == ["x" * MAX_LENGTH]


def test_more_than_the_most_labels_are_refused_at_once():
    with pytest.raises(InvalidLabels, match=f"at most {MAX_LABELS}"):
        labels(*[f"l{i}" for i in range(MAX_LABELS + 1)])


def test_labels_adding_up_past_the_most_are_refused_at_enqueue_writing_nothing():
    with labels(*[f"l{i}" for i in range(MAX_LABELS - 1)]):
        ok = t.charge.enqueue(1)  # billing + 19: exactly the most
        with pytest.raises(InvalidLabels, match=f"at most {MAX_LABELS}"):
            t.refund.enqueue(1)  # billing, money + 19
        with pytest.raises(InvalidLabels):
            t.refund.get_backend().enqueue_all([(t.plain, (1,), {}), (t.refund, (2,), {})])
    assert list(Job.objects.values_list("pk", flat=True)) == [int(ok.id)]
    assert JobLabel.objects.count() == MAX_LABELS


def test_the_decorator_takes_a_task_not_a_function():
    def function():
        pass

    with pytest.raises(TypeError, match="above @task"):
        labels("x")(function)


def test_decorating_again_adds_to_the_static_labels():
    assert static_labels(t.twice.module_path) == ("a", "b")
    assert labels_of(t.twice.enqueue()) == ["a", "b"]


def test_labels_are_exact_strings_case_and_spaces_kept():
    with labels("Tenant", "tenant", "tenant "):
        result = t.plain.enqueue()
    assert labels_of(result) == ["Tenant", "tenant", "tenant "]
    assert indexed(result) == {"Tenant", "tenant", "tenant "}
    assert Job.objects.labelled(all=["tenant "]).count() == 1
    assert Job.objects.labelled(all=["TENANT"]).count() == 0
