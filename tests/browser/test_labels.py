"""Labels in a real browser: a chip filters its list, a second label narrows it with "all",
and "Retry all matching" retries exactly the jobs shown (issue 29, part 2)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from steady_queue.labels import labels
from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests.tasks import dashboard as tasks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def failed_with(*names: str, count: int) -> list[int]:
    with labels(*names):
        results = [tasks.fail.enqueue(f"{'+'.join(names)} {n}") for n in range(count)]
    run_ready_jobs()
    return [int(result.id) for result in results]


def test_filter_by_two_labels_with_all_then_retry_exactly_those(open_dashboard):
    both = failed_with("a", "b", count=3)
    only_a = failed_with("a", count=2)
    only_b = failed_with("b", count=2)
    page = open_dashboard("/jobs/failed/")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(7)

    # A row's chip filters the list by its label.
    page.locator(f"#job-row-{only_a[0]}").get_by_role("link", name="a", exact=True).click()
    expect(page.locator("tr[id^=job-row-]")).to_have_count(5)
    expect(page.locator("#id_label_mode")).to_have_value("all")

    # One more label, with "all": the jobs holding both.
    page.fill("#id_label", "b")
    page.press("#id_label", "Enter")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(3)
    for pk in both:
        expect(page.locator(f"#job-row-{pk}")).to_be_visible()
    expect(page.locator("form.filters.htmx-request")).to_have_count(0)
    assert "label=a" in page.url and "label=b" in page.url  # the URL holds the filter

    page.get_by_role("button", name="Retry all matching…").click()
    confirm = page.locator(".confirm")
    expect(confirm).to_contain_text("Retry 3 jobs?")
    confirm.get_by_role("button", name="Retry 3 jobs").click()
    expect(page.locator("#sq-messages")).to_contain_text("3 jobs will run again.")
    still_failed = set(
        Job.objects.filter(failed_execution__isnull=False).values_list("pk", flat=True)
    )
    assert still_failed == {*only_a, *only_b}
    assert all(job.state == "ready" for job in Job.objects.with_execution().filter(pk__in=both))
