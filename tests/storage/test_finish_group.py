"""Group commit of finishes (storage.finish_group): who leads, who waits, what a failure does.

No database here: ``write`` is a function of the test's, so that the threads' order is
the test's to arrange (each waits on conditions, with deadlines).
"""

from __future__ import annotations

import threading

import pytest

from steady_queue.storage.finish_group import FinishGroup, FinishGroups, WriteAlone

DEADLINE = 10


class Writes:
    """A ``write`` that records its batches; the first one waits until told to go on."""

    def __init__(self, fail_with: BaseException | None = None):
        self.batches: list[list] = []
        self.first_started = threading.Event()
        self.go_on = threading.Event()
        self.fail_with = fail_with

    def __call__(self, entries: list) -> list:
        self.batches.append(list(entries))
        if len(self.batches) == 1:
            self.first_started.set()
            assert self.go_on.wait(DEADLINE)
        if self.fail_with is not None and len(self.batches) > 1:
            raise self.fail_with
        return [f"done {entry}" for entry in entries]


def in_thread(function, *args) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run():
        try:
            out["result"] = function(*args)
        except BaseException as exc:  # the test looks at what it raised
            out["raised"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def wait_until(condition) -> None:
    event = threading.Event()
    for _ in range(DEADLINE * 1000):
        if condition():
            return
        event.wait(0.001)
    raise AssertionError("condition not met in time")


def test_a_thread_alone_writes_at_once_in_a_group_of_one():
    group = FinishGroup(lambda entries: [f"done {entry}" for entry in entries])

    assert group.finish("a") == "done a"


def test_threads_that_finish_during_a_write_share_the_next_one():
    writes = Writes()
    group = FinishGroup(writes)
    leader, led = in_thread(group.finish, "a")
    assert writes.first_started.wait(DEADLINE)
    others = [in_thread(group.finish, name) for name in "bcd"]
    wait_until(lambda: len(group._waiting) == 3)  # all three wait for the first write

    writes.go_on.set()
    for thread, _ in [(leader, led), *others]:
        thread.join(DEADLINE)

    assert led == {"result": "done a"}
    assert sorted(out["result"] for _, out in others) == ["done b", "done c", "done d"]
    assert [len(batch) for batch in writes.batches] == [1, 3]
    assert not group._writing and not group._waiting  # the last leader let go


def test_a_failed_group_tells_each_of_its_threads_to_write_alone():
    writes = Writes(fail_with=RuntimeError("deadlock detected"))
    group = FinishGroup(writes)
    leader, _ = in_thread(group.finish, "a")
    assert writes.first_started.wait(DEADLINE)
    others = [in_thread(group.finish, name) for name in "bc"]
    wait_until(lambda: len(group._waiting) == 2)

    writes.go_on.set()
    leader.join(DEADLINE)
    for thread, out in others:
        thread.join(DEADLINE)
        assert isinstance(out["raised"], WriteAlone)
        assert isinstance(out["raised"].args[0], RuntimeError)
    assert not group._writing  # the next thread leads again


def test_a_thread_alone_gets_its_own_error_it_wrote_alone_already():
    def write(entries):
        raise ValueError("bad value")

    with pytest.raises(ValueError, match="bad value"):
        FinishGroup(write).finish("a")


def test_a_stopped_leader_raises_and_its_group_writes_alone():
    writes = Writes(fail_with=KeyboardInterrupt())
    group = FinishGroup(writes)
    first, _ = in_thread(group.finish, "a")
    assert writes.first_started.wait(DEADLINE)
    others = [in_thread(group.finish, name) for name in "bc"]
    wait_until(lambda: len(group._waiting) == 2)

    writes.go_on.set()
    first.join(DEADLINE)
    raised = []
    for thread, out in others:
        thread.join(DEADLINE)
        raised.append(type(out["raised"]))

    # The one of b and c that led the failing write was stopped; the other writes alone.
    assert sorted(kind.__name__ for kind in raised) == ["KeyboardInterrupt", "WriteAlone"]
    assert not group._writing


def test_finishes_of_other_shapes_are_other_groups():
    seen = []

    def write(key, entries):
        seen.append((key, list(entries)))
        return [None for _ in entries]

    groups = FinishGroups(write)

    assert groups.finish("one", "a") is None  # a None result is a result too
    groups.finish("two", "b")
    assert seen == [("one", ["a"]), ("two", ["b"])]
    assert groups._groups["one"] is not groups._groups["two"]
