"""Release by hand: a free slot only; the holders shown and a signed "Run over the limit" step.

One job (job page, list row, a key's "Release next"), the selected rows and every job
matching a filter: none answers 500, none runs a job over its limit without the
explicit step, and every release and forced release is in the audit log.
"""

from __future__ import annotations

import pytest
from django.db.models import Q

from steady_queue.models import Job, Semaphore
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import dashboard as tasks

from .page_forms import confirm_form, hidden_fields, url

pytestmark = pytest.mark.django_db

FORCE_FORM = "sq-release-form"


def state(job) -> str:
    fresh = Job.objects.with_execution().filter(pk=getattr(job, "pk", job)).first()
    return fresh.state if fresh else "gone"


def holder_of(job: Job) -> Job:
    """The job holding the one slot of ``job``'s key: ready, or running."""
    holding = Q(ready_execution__isnull=False) | Q(claimed_execution__isnull=False)
    return Job.objects.filter(holding).get(concurrency_key=job.concurrency_key)


def messages_of(response) -> list[str]:
    return [str(message) for message in response.wsgi_request._messages]


def free_a_slot(job: Job) -> None:
    Semaphore.objects.filter(key=job.concurrency_key).update(value=1)


def actions() -> list[tuple[str, bool, int]]:
    return list(AuditEntry.objects.order_by("pk").values_list("action", "succeeded", "affected"))


def test_release_into_a_free_slot_runs_the_job_without_asking(admin_client, jobs):
    free_a_slot(jobs.blocked)

    response = admin_client.post(url("job-release", jobs.blocked.pk), follow=True)

    assert state(jobs.blocked) == "ready"
    assert messages_of(response) == [
        f"Job {jobs.blocked.pk} was released into a free slot and is ready to run."
    ]
    assert actions() == [("release", True, 1)]


def test_release_without_a_free_slot_keeps_the_job_blocked_and_shows_the_holders(
    admin_client, jobs
):
    holder = holder_of(jobs.blocked)

    response = admin_client.post(url("job-release", jobs.blocked.pk))

    assert response.status_code == 200
    html = response.content.decode()
    assert state(jobs.blocked) == "blocked"
    assert "every slot of its concurrency key is held" in html
    assert "1 of 1 slots held" in html and f"job #{holder.pk}" in html
    assert f"Run job #{jobs.blocked.pk} over the limit" in html
    assert actions() == [("release", False, 0)]


def test_running_over_the_limit_takes_the_explicit_step(admin_client, jobs):
    asked = admin_client.post(url("job-release", jobs.blocked.pk)).content.decode()

    response = admin_client.post(
        url("job-release", jobs.blocked.pk), hidden_fields(asked, FORCE_FORM)
    )

    assert response.status_code == 302
    assert state(jobs.blocked) == "ready"
    assert Semaphore.objects.get(key=jobs.blocked.concurrency_key).value == -1
    assert actions() == [("release", False, 0), ("release over the limit", True, 1)]


def test_a_force_without_its_signed_step_does_not_run_over_the_limit(admin_client, jobs):
    response = admin_client.post(url("job-release", jobs.blocked.pk), {"force": "1"})

    assert response.status_code == 200
    assert state(jobs.blocked) == "blocked"
    assert "nothing ran over the limit" in response.content.decode()
    assert [action for action, *_ in actions()] == ["release"]


def test_the_step_signed_for_one_job_does_not_force_another(admin_client, jobs):
    other = Job.objects.get(pk=tasks.limited.enqueue(42).id)
    asked = admin_client.post(url("job-release", jobs.blocked.pk)).content.decode()

    admin_client.post(url("job-release", other.pk), hidden_fields(asked, FORCE_FORM))

    assert (state(other), state(jobs.blocked)) == ("blocked", "blocked")


def test_htmx_asks_in_the_messages_area(htmx, jobs):
    response = htmx.post(url("job-release", jobs.blocked.pk))
    assert response.status_code == 200
    assert response["HX-Retarget"] == "#sq-messages"
    html = response.content.decode()
    assert "<html" not in html and 'id="sq-release-form"' in html


def test_release_of_a_job_that_is_not_blocked_says_so(admin_client, jobs):
    response = admin_client.post(url("job-release", jobs.pending.pk), follow=True)
    assert response.status_code == 200
    assert "only blocked jobs can be released" in messages_of(response)[0]
    response = admin_client.post(url("job-release", jobs.pending.pk), {"force": "1"}, follow=True)
    assert response.status_code == 200 and state(jobs.pending) == "ready"


def test_release_next_on_a_key_asks_the_same_and_forces_that_job(admin_client, jobs):
    key = jobs.blocked.concurrency_key
    asked = admin_client.post(url("concurrency-release", key)).content.decode()
    assert f'action="{url("job-release", jobs.blocked.pk)}"' in asked

    admin_client.post(url("job-release", jobs.blocked.pk), hidden_fields(asked, FORCE_FORM))

    assert state(jobs.blocked) == "ready"


def second_key_blocked() -> tuple[Job, Job]:
    """A job blocked on account 7, whose one slot is then freed; and its holder."""
    holder = Job.objects.get(pk=tasks.limited.enqueue(7).id)
    blocked = Job.objects.get(pk=tasks.limited.enqueue(7).id)
    free_a_slot(blocked)
    return blocked, holder


def test_release_selected_releases_where_free_and_asks_for_the_rest(admin_client, jobs):
    freed, _ = second_key_blocked()
    selection = {"ids": [str(jobs.blocked.pk), str(freed.pk)]}

    asked = admin_client.post(url("jobs-release", "blocked"), selection)

    html = asked.content.decode()
    assert asked.status_code == 200 and "1 job was released into a free slot" in html
    assert (state(freed), state(jobs.blocked)) == ("ready", "blocked")
    assert f"job #{holder_of(jobs.blocked).pk}" in html and "Run 1 job over the limit" in html

    admin_client.post(url("jobs-release", "blocked"), hidden_fields(html, FORCE_FORM))

    assert state(jobs.blocked) == "ready"
    assert actions() == [("release", True, 1), ("release over the limit", True, 1)]


def test_release_all_matching_is_confirmed_then_asks_before_forcing(admin_client, jobs):
    freed, _ = second_key_blocked()
    asked = admin_client.post(url("jobs-release", "blocked"), {"scope": "all"}).content.decode()
    assert "Release 2 jobs" in asked and state(freed) == "blocked"  # nothing yet

    page = admin_client.post(url("jobs-release", "blocked"), confirm_form(asked)).content.decode()
    assert (state(freed), state(jobs.blocked)) == ("ready", "blocked")
    assert "Run 1 job over the limit" in page

    admin_client.post(url("jobs-release", "blocked"), hidden_fields(page, FORCE_FORM))
    assert state(jobs.blocked) == "ready"
    forced = AuditEntry.objects.get(action="release over the limit")
    assert forced.affected == 1 and forced.details["filters"] == []


def test_a_bulk_force_is_asked_again_when_more_jobs_are_blocked_since(admin_client, jobs):
    page = admin_client.post(url("jobs-release", "blocked"), {"scope": "all", "confirm": ""})
    page = admin_client.post(url("jobs-release", "blocked"), confirm_form(page.content.decode()))
    later = Job.objects.get(pk=tasks.limited.enqueue(42).id)  # blocked after the page was shown

    again = admin_client.post(
        url("jobs-release", "blocked"), hidden_fields(page.content.decode(), FORCE_FORM)
    )

    assert again.status_code == 200 and "changed since you were asked" in again.content.decode()
    assert (state(jobs.blocked), state(later)) == ("blocked", "blocked")


def test_an_unsigned_force_on_all_matching_only_asks_for_confirmation(admin_client, jobs):
    freed, _ = second_key_blocked()
    response = admin_client.post(url("jobs-release", "blocked"), {"scope": "all", "force": "1"})
    assert response.status_code == 200 and "Release 2 jobs" in response.content.decode()
    assert (state(freed), state(jobs.blocked)) == ("blocked", "blocked")
    assert not AuditEntry.objects.exists()


def test_the_release_page_reads_a_bounded_number_of_queries(
    admin_client, jobs, django_assert_max_num_queries
):
    for account in range(30):  # thirty keys, each with a holder and a blocked job
        tasks.limited.enqueue(1000 + account)
        tasks.limited.enqueue(1000 + account)
    # 82: each of the two steps reads the first ids the confirmation lists (issue 25, 8).
    with django_assert_max_num_queries(82):
        response = admin_client.post(
            url("jobs-release", "blocked"), {"scope": "all", "confirm": ""}
        )
        page = admin_client.post(
            url("jobs-release", "blocked"), confirm_form(response.content.decode())
        )
    assert page.status_code == 200 and "Run 31 jobs over the limit" in page.content.decode()
