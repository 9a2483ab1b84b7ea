"""Recurring schedules made at run time: schedule / unschedule, their checks, the scheduler."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steady_queue.exceptions import ScheduleError
from steady_queue.models import RecurringTask
from steady_queue.recurring_task import schedule, unschedule
from tests.models.recurring_clock import Clock, booted, declare, poll, run_times, utc
from tests.tasks import add, echo
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db


def test_schedule_stores_a_dynamic_row_with_every_field(declared):
    row = schedule(
        "nightly",
        "tests.tasks.add",
        cron="0 3 * * *",
        args=[1],
        kwargs={"b": 2},
        queue_name="background",
        priority=5,
        timezone="Europe/Paris",
        description="adds",
        catch_up=timedelta(hours=1),
    )

    stored = RecurringTask.objects.get(key="nightly")
    assert stored.pk == row.pk and stored.dynamic and stored.enabled
    assert (stored.schedule, stored.task_path, stored.timezone) == (
        "0 3 * * *",
        "tests.tasks.add",
        "Europe/Paris",
    )
    assert (stored.queue_name, stored.priority, stored.description) == ("background", 5, "adds")
    assert stored.catch_up_window == timedelta(hours=1)
    assert stored.task().queue_name == "background"


def test_schedule_takes_the_task_object_and_updates_by_key(declared):
    schedule("report", add, cron="0 3 * * *", args=[1, 2])
    RecurringTask.objects.get(key="report").disable()

    schedule("report", echo, cron="*/5 * * * *", args=["x"])

    [row] = RecurringTask.objects.all()
    assert (row.schedule, row.task_path) == ("*/5 * * * *", "tests.tasks.echo")
    assert not row.enabled  # a paused schedule stays paused when it is edited


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"cron": "61 * * * *"}, "cron", "Bad cron schedule"),
        ({"cron": "0 0 30 2 *"}, "cron", "matches no date"),
        ({"timezone": "Mars/Olympus"}, "timezone", "not a known time zone"),
        ({"task": "tests.tasks.nope"}, "task", "Cannot import task"),
        ({"task": "tests.tasks.CALLS"}, "task", "is not a task"),
        ({"args": [1, 2, 3]}, "args", "cannot take these arguments"),
        ({"args": [object(), 1]}, "args", "Argument"),
        ({"kwargs": ["b"]}, "kwargs", "kwargs must be a dict"),
        ({"priority": "high"}, "priority", "priority must be an integer"),
        ({"priority": 10_000}, "priority", "priority"),
        ({"queue_name": "no-such-queue"}, "queue_name", "not valid"),
        ({"key": ""}, "key", "needs a key"),
        ({"key": "k" * 256}, "key", "at most 255"),
        ({"cron": "0 3 * * *" + " " * 250}, "cron", "at most 255"),
        ({"catch_up": timedelta(0)}, "catch_up", "positive"),
    ],
)
def test_bad_input_is_refused_and_writes_nothing(declared, changes, field, words):
    call = {"key": "k", "task": "tests.tasks.add", "cron": "0 3 * * *", "args": [1, 2]}
    call.update(changes)
    key, task = call.pop("key"), call.pop("task")

    with pytest.raises(ScheduleError, match=words) as raised:
        schedule(key, task, **call)

    assert raised.value.field == field
    assert not RecurringTask.objects.exists()


def test_a_bad_edit_leaves_the_schedule_as_it_was(declared):
    schedule("report", add, cron="0 3 * * *", args=[1, 2])

    with pytest.raises(ScheduleError):
        schedule("report", add, cron="0 4 * * *", args=[1, 2], timezone="Nowhere/Else")

    assert RecurringTask.objects.get(key="report").schedule == "0 3 * * *"


def test_a_key_declared_in_code_is_refused_even_before_a_scheduler_stored_it(declared):
    declare("* * * * *", key="declared")

    with pytest.raises(ScheduleError, match="declared in code") as raised:
        schedule("declared", add, cron="0 3 * * *", args=[1, 2])

    assert raised.value.field == "key"
    assert not RecurringTask.objects.exists()


def test_a_declared_schedule_cannot_be_unscheduled(declared):
    declare("* * * * *", key="declared")
    RecurringTask.objects.sync_static(declared)

    with pytest.raises(ScheduleError, match="declared in code"):
        unschedule("declared")

    assert RecurringTask.objects.filter(key="declared").exists()


def test_unschedule_deletes_a_dynamic_schedule_once(declared):
    schedule("report", add, cron="0 3 * * *", args=[1, 2])

    assert unschedule("report") is True
    assert unschedule("report") is False
    assert not RecurringTask.objects.exists()


def test_syncing_declarations_never_overwrites_a_dynamic_schedule(declared):
    schedule("shared-key", add, cron="0 3 * * *", args=[1, 2])
    declare("* * * * *", key="shared-key")

    RecurringTask.objects.sync_static(declared)

    row = RecurringTask.objects.get(key="shared-key")
    assert row.dynamic and row.schedule == "0 3 * * *"


def test_a_running_scheduler_enqueues_a_new_schedule_from_its_next_poll(declared):
    clock = Clock(utc(2030, 1, 1, 12, 0, 0))
    scheduler = booted(clock)
    schedule("dynamic", tasks.tick, cron="*/10 * * * *")

    clock.advance(minutes=25)
    poll(scheduler)  # sees the row; its first run is the next fire time from now
    clock.advance(minutes=10)
    poll(scheduler)

    assert run_times("dynamic") == [utc(2030, 1, 1, 12, 30)]


def test_an_edited_cron_takes_effect_at_the_next_poll(declared):
    clock = Clock(utc(2030, 1, 1, 12, 0, 0))
    schedule("dynamic", tasks.tick, cron="0 * * * *")
    scheduler = booted(clock)

    schedule("dynamic", tasks.tick, cron="5 * * * *")
    poll(scheduler)
    clock.advance(minutes=6)
    poll(scheduler)

    assert run_times("dynamic") == [utc(2030, 1, 1, 12, 5)]


def test_unscheduled_runs_stop_at_the_next_poll(declared):
    clock = Clock(utc(2030, 1, 1, 12, 0, 0))
    schedule("dynamic", tasks.tick, cron="* * * * *")
    scheduler = booted(clock)

    unschedule("dynamic")
    clock.advance(minutes=3)
    poll(scheduler)

    assert run_times("dynamic") == []


def test_a_declared_schedule_follows_its_own_time_zone(declared):
    declare("0 9 * * *", key="paris", timezone="Europe/Paris")
    clock = Clock(utc(2030, 1, 1, 0, 0, 0))
    scheduler = booted(clock)

    for _ in range(24):
        clock.advance(hours=1)
        poll(scheduler)

    assert run_times("paris") == [utc(2030, 1, 1, 8, 0)]  # 09:00 in Paris, winter time


def test_a_scheduler_warns_when_a_declaration_is_left_out_for_a_dynamic_schedule(declared, caplog):
    schedule("shared-key", add, cron="0 3 * * *", args=[1, 2])
    declare("* * * * *", key="shared-key")

    booted(Clock(utc(2030, 1, 1)))

    assert "a schedule made at run time holds its key" in caplog.text
    assert RecurringTask.objects.get(key="shared-key").schedule == "0 3 * * *"


def test_a_declared_unknown_time_zone_is_a_check_error_and_never_scheduled(declared, caplog):
    from steady_queue.checks.recurring import check_recurring_tasks

    declare("0 9 * * *", key="nowhere", timezone="Atlantis/Capital")

    [error] = check_recurring_tasks()
    assert "'Atlantis/Capital' is not a known time zone" in error.msg
    scheduler = booted(Clock(utc(2030, 1, 1)))
    assert "nowhere" not in scheduler.tasks and "never fires" in caplog.text
    assert RecurringTask.objects.get(key="nowhere").upcoming_run_at is None
