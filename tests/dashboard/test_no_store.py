"""After "Log out", the back button must not show what an operator saw: no page of the
console, and no fragment or action answer, may be kept by the browser (issue 25, item 14)."""

from __future__ import annotations

import pytest
from django.urls import resolve, reverse

from steady_queue import arguments
from steady_queue.models import Batch, Job, RecurringTask
from steady_queue_dashboard import urls

from .test_archive import archived
from .test_pages import FRAGMENT_IDS, page_urls
from .test_workflows import failing_run

pytestmark = pytest.mark.django_db


def _not_stored(response) -> None:
    directives = {part.strip() for part in response["Cache-Control"].split(",")}
    assert {"no-store", "private"} <= directives, response["Cache-Control"]


@pytest.mark.parametrize("page", list(FRAGMENT_IDS))
def test_every_page_is_sent_with_no_store(admin_client, jobs, page):
    response = admin_client.get(page_urls(jobs)[page])
    assert response.status_code == 200
    _not_stored(response)


@pytest.mark.parametrize("page", list(FRAGMENT_IDS))
def test_every_fragment_is_sent_with_no_store(htmx, jobs, page):
    response = htmx.get(page_urls(jobs)[page])
    assert response.status_code == 200
    _not_stored(response)


def test_an_action_answer_is_sent_with_no_store(htmx, jobs):
    response = htmx.post(reverse("steady_queue_dashboard:job-retry", args=[jobs.failed.pk]))
    assert response.status_code in (200, 302)
    _not_stored(response)


def _more_pages() -> dict[str, str]:
    """The pages ``page_urls`` leaves out, with a row of each to show."""
    batch = Batch.objects.create(description="in the block")
    RecurringTask.objects.create(
        key="report",
        schedule="*/10 * * * *",
        task_path="tests.tasks.dashboard.record",
        arguments=arguments.serialize([1], {}),
        static=False,
    )
    run = failing_run()
    row = archived()
    name = "steady_queue_dashboard:"
    return {
        "batch": reverse(name + "batch-detail", args=[batch.pk]),
        "recurring": reverse(name + "recurring-detail", args=["report"]),
        "new schedule": reverse(name + "recurring-new"),
        "edit schedule": reverse(name + "recurring-edit", args=["report"]),
        "workflow": reverse(name + "workflow-detail", args=[run.id]),
        "errors": reverse(name + "error-groups"),
        "job log": reverse(name + "job-logs", args=[_a_job()]),
        "job stack": reverse(name + "job-stack-answer", args=[_a_job(), 1]),
        "new job": reverse(name + "job-new"),
        "edit job": reverse(name + "job-edit", args=[_a_job()]),
        "retry job with changes": reverse(name + "job-retry-changed", args=[_failed_job()]),
        "duplicate job": reverse(name + "job-duplicate", args=[_a_job()]),
        "send signal": reverse(name + "job-signal", args=[_a_job()]),
        "archived job": reverse(name + "archive-detail", args=[row.pk]),
        "restore archived job": reverse(name + "archive-restore", args=[row.pk]),
    }


def _failed_job() -> int:
    return Job.objects.filter(failed_execution__isnull=False).values_list("pk", flat=True)[0]


def _a_job() -> int:
    return Job.objects.order_by("pk").values_list("pk", flat=True)[0]


def test_the_other_pages_and_their_fragments_are_sent_with_no_store(admin_client, jobs):
    for target in _more_pages().values():
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = admin_client.get(target, **headers)
            assert response.status_code == 200, target
            _not_stored(response)


def test_the_pages_checked_here_are_every_page_of_the_console(jobs):
    pages = {
        pattern.name
        for pattern in urls.urlpatterns
        if not str(pattern.pattern).startswith("actions/") and pattern.name != "error-group-action"
    }
    checked = [*page_urls(jobs).values(), *_more_pages().values()]
    covered = {resolve(url.split("?")[0]).url_name for url in checked}
    assert pages <= covered, pages - covered
