"""Job.new: the unsaved job of a bulk enqueue, built without Model.__init__ when nothing
listens to Job's init signals, and the same as ``Job(**values)`` either way."""

from __future__ import annotations

import pytest
from django.db.models.signals import post_init

from steady_queue.models import Job

VALUES = {"queue_name": "mail", "task_path": "tests.tasks.echo", "priority": 3}


def fields_of(job: Job) -> dict:
    return {field.attname: getattr(job, field.attname) for field in Job._meta.concrete_fields}


def without_times(values: dict) -> dict:
    return {name: value for name, value in values.items() if name != "created_at"}


def test_a_new_job_has_the_values_and_defaults_of_one_made_by_init():
    made, expected = Job.new(**VALUES), Job(**VALUES)
    assert without_times(fields_of(made)) == without_times(fields_of(expected))
    assert made.created_at is not None and made._state.adding and made._state.db is None


def test_new_jobs_share_no_mutable_default():
    first, second = Job.new(**VALUES), Job.new(**VALUES)
    first.attempts.append({"worker_id": "w"})
    first.arguments["args"] = [1]
    assert second.attempts == [] and second.arguments == {}


def test_a_new_job_saves_and_loads_back(db):
    job = Job.new(**VALUES)
    job.save()
    assert without_times(fields_of(Job.objects.get(pk=job.pk))) == without_times(fields_of(job))


def test_an_unknown_field_is_refused():
    with pytest.raises(TypeError, match="Job has no fields colour"):
        Job.new(colour="red", **VALUES)


def test_init_receivers_for_job_are_called():
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.queue_name)

    post_init.connect(receiver, sender=Job)
    try:
        job = Job.new(**VALUES)
    finally:
        post_init.disconnect(receiver, sender=Job)
    assert seen == ["mail"] and without_times(fields_of(job)) == without_times(
        fields_of(Job(**VALUES))
    )
