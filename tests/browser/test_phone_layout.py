"""The dashboard at phone width (390 by 844 px): nothing sticks out of the page sideways.

A list's rows are cards there, each showing its job (or queue, process, task…), its
cells labelled, its error and its action buttons inside the screen; the filters fold
behind one button; the navigation and the status tabs wrap instead of scrolling. At
desktop width (1280 px) the same lists are plain tables, as before.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from steady_queue.batches import batch
from steady_queue.models import Job
from steady_queue.pauses import pause_task
from steady_queue.workflows import Workflow
from steady_queue_dashboard.models import AuditEntry
from tests import tasks as plain_tasks
from tests.browser.test_dashboard import seed_a_busy_hour
from tests.dashboard.test_archive import archived
from tests.tasks import dashboard as tasks
from tests.tasks import groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}
SCREENSHOT_MAX_HEIGHT = 1400
# A squeezed column shows a letter or two per line. Every visible cell with text must
# leave room for at least six characters (or its whole text, if shorter) at about
# 6 px each, padding left out; hidden labels (visually-hidden) do not count.
CHARACTER_PX = 6
SQUEEZED_CELLS = """(characterPx) => [...document.querySelectorAll('table th, table td')]
  .filter(cell => cell.offsetParent !== null)
  .map(cell => {
    const copy = cell.cloneNode(true);
    copy.querySelectorAll('.visually-hidden').forEach(hidden => hidden.remove());
    const style = getComputedStyle(cell);
    const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
    const text = copy.textContent.trim();
    return {text, room: cell.getBoundingClientRect().width - padding,
            needed: Math.min(text.length, 6) * characterPx};
  })
  .filter(cell => cell.text && cell.room < cell.needed)
  .map(cell => `${cell.text.slice(0, 30)} (${Math.round(cell.room)} px)`)"""
# Every shown element of the given selector's elements (and the elements themselves)
# that reaches past the left or right edge of the window, as "tag.class text".
OUTSIDE_THE_WINDOW = """(selector) => {
  const outside = [];
  for (const root of document.querySelectorAll(selector)) {
    for (const element of [root, ...root.querySelectorAll('*')]) {
      const box = element.getBoundingClientRect();
      if (!box.width || !box.height) continue;
      if (box.left < -0.5 || box.right > window.innerWidth + 0.5) {
        const kind = element.className.baseVal ?? element.className;
        const text = (element.textContent || '').trim().slice(0, 30);
        const edges = `[${Math.round(box.left)}, ${Math.round(box.right)}]`;
        outside.push(`${element.tagName.toLowerCase()}.${kind} ${text} ${edges}`);
      }
    }
  }
  return outside;
}"""

# Every list of the dashboard, with the rows seed_every_list puts in it.
LIST_PAGES = [
    "failed",
    "cancelled",
    "finished",
    "ready",
    "scheduled",
    "running",
    "blocked",
    "throttled",
    "waiting",
    "paused",
    "queues",
    "processes",
    "tasks",
    "recurring",
    "concurrency",
    "rate-limits",
    "batches",
    "workflows",
    "audit",
    "errors",
    "archive",
]
JOB_STATES = LIST_PAGES[:10]
# Pages whose filter form folds behind a "Filters" button at phone width.
FILTERED_PAGES = [*JOB_STATES, "batches", "workflows", "archive"]


def seed_every_list() -> None:
    """A busy hour, plus a row for each list the busy hour leaves empty."""
    with batch(description="nightly import"):
        groups.import_row.enqueue(1)
    seed_a_busy_hour()  # runs the batch's job with the rest
    # Not run: "load" waits for "extract", which stays pending.
    workflow = Workflow("monthly close")
    first = workflow.add(groups.step, args=(1,), name="extract")
    workflow.add(groups.step, args=(2,), after=[first], name="load")
    workflow.enqueue()
    Job.objects.get(pk=tasks.record.enqueue("to cancel").id).cancel()
    for _ in range(3):  # two a minute: the third waits, throttled
        tasks.call_partner.enqueue(7)
    pause_task(plain_tasks.echo)  # its job waits as paused
    plain_tasks.echo.enqueue("paused")
    AuditEntry.objects.create(
        created_at=timezone.now(),
        username="root",
        action="retry",
        target="job #1",
        affected=1,
        message="Retried 1 job.",
    )
    archived(labels=["tenant:acme"])


def path_of(page_name: str) -> str:
    return f"/jobs/{page_name}/"


def open_at_phone_width(open_dashboard, path: str):
    page = open_dashboard(path)
    page.set_viewport_size(PHONE)
    page.reload()
    page.wait_for_load_state("networkidle")
    return page


def assert_nothing_sticks_out(page, path: str) -> None:
    page_width = page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= PHONE["width"], f"{path} is {page_width} px wide at 390 px"
    assert page.evaluate("window.scrollX") == 0


def save_first_screens(page, screenshots, name: str) -> None:
    # The first screens of the page: a long list would make an unreadable strip.
    height = min(page.evaluate("document.documentElement.scrollHeight"), SCREENSHOT_MAX_HEIGHT)
    clip = {"x": 0, "y": 0, "width": page.viewport_size["width"], "height": height}
    page.screenshot(path=screenshots / f"{name}.png", full_page=True, clip=clip)


@pytest.mark.parametrize("path", ["/jobs/", "/jobs/failed/"], ids=["overview", "failed"])
def test_phone_width_page_fits_and_columns_stay_readable(open_dashboard, screenshots, path):
    seed_a_busy_hour()
    assert Job.objects.filter(failed_execution__isnull=False).exists()
    page = open_at_phone_width(open_dashboard, path)

    assert page.locator("table").count() > 0
    assert_nothing_sticks_out(page, path)
    assert page.evaluate(SQUEEZED_CELLS, CHARACTER_PX) == []

    save_first_screens(page, screenshots, "phone-overview" if path == "/jobs/" else "phone-failed")


def test_a_failed_jobs_card_shows_its_job_error_and_retry_button_on_screen(open_dashboard):
    seed_a_busy_hour()
    page = open_at_phone_width(open_dashboard, "/jobs/failed/")

    row = page.locator("table.jobs tbody tr").first
    job_id = int(row.get_attribute("id").removeprefix("job-row-"))
    assert Job.objects.get(pk=job_id).failed_execution
    row.scroll_into_view_if_needed()
    assert_nothing_sticks_out(page, "/jobs/failed/")
    cells = {
        "job": row.locator("td.id a"),
        "task": row.locator("td.task a"),
        "error": row.locator("td.error-cell a"),
        "Retry": row.get_by_role("button", name="Retry"),
        "Discard": row.get_by_role("button", name="Discard"),
    }
    for name, cell in cells.items():
        box = cell.bounding_box()
        assert box is not None and cell.is_visible(), f"{name} is not shown"
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], f"{name} at {box}"
        assert box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"], f"{name} at {box}"
    assert cells["job"].inner_text() == f"#{job_id}"
    assert page.evaluate(OUTSIDE_THE_WINDOW, f"#job-row-{job_id}") == []
    # Each cell says what it holds: the table's head is not on screen at this width.
    assert (
        row.locator("td.error-cell").evaluate("cell => getComputedStyle(cell, '::before').content")
        == '"Error"'
    )


# One page load per list checks all three promises (cards, navigation, folded filters):
# a load per promise tripled the suite's browser time on every database.
@pytest.mark.parametrize("page_name", LIST_PAGES)
def test_every_list_is_cards_with_wrapped_navigation_and_folded_filters(
    open_dashboard, screenshots, page_name
):
    seed_every_list()
    path = path_of(page_name)
    page = open_at_phone_width(open_dashboard, path)

    assert_rows_are_labelled_cards_inside_the_screen(page, path)
    (screenshots / "phone-lists").mkdir(exist_ok=True)
    save_first_screens(page, screenshots, f"phone-lists/{page_name}")
    if page_name in FILTERED_PAGES:
        assert_filters_fold_behind_one_button(page, path)
    assert_navigation_and_tabs_wrap_inside_the_screen(page, path, page_name)


def assert_rows_are_labelled_cards_inside_the_screen(page, path: str) -> None:
    rows = page.locator("table.stack tbody tr")
    assert rows.count() > 0, f"{path} shows no rows to lay out"
    assert_nothing_sticks_out(page, path)
    assert page.evaluate(SQUEEZED_CELLS, CHARACTER_PX) == []
    assert page.evaluate(OUTSIDE_THE_WINDOW, "table.stack tbody tr") == []
    # A card, not a table row: its cells stack, each with its column's name (the head,
    # which would name them, is hidden), bar the title (#id), checkbox and buttons.
    assert rows.first.evaluate("row => getComputedStyle(row).display") == "grid"
    assert page.locator("table.stack thead th:not(.select)").first.is_hidden()
    unlabelled = page.evaluate(
        """() => [...document.querySelectorAll('table.stack tbody td')]
          .filter(cell => !cell.matches('.id, .select, .actions'))
          .filter(cell => ['none', 'normal'].includes(getComputedStyle(cell, '::before').content))
          .map(cell => cell.textContent.trim().slice(0, 30))"""
    )
    assert unlabelled == []


def assert_filters_fold_behind_one_button(page, path: str) -> None:
    button = page.locator(".filter-box > summary")
    fields = page.locator("form.filters .field:not(.actions) :is(input, select):visible")
    assert button.is_visible()
    assert button.inner_text().strip().startswith("Filters")
    assert page.locator("form.filters").is_hidden()
    assert fields.count() == 0
    button.click()
    assert page.locator("form.filters").is_visible()
    assert fields.count() > 0
    assert_nothing_sticks_out(page, path)
    assert page.evaluate(OUTSIDE_THE_WINDOW, "form.filters") == []


def assert_navigation_and_tabs_wrap_inside_the_screen(page, path: str, page_name: str) -> None:
    links = page.locator(".nav a")
    assert links.count() == 13
    for selector in (".nav", ".tabs"):
        assert page.evaluate(OUTSIDE_THE_WINDOW, selector) == [], selector
    for selector in (".nav", ".tabs"):
        scrolled = page.evaluate(
            "(s) => [...document.querySelectorAll(s)]"
            ".filter(e => e.scrollWidth > e.clientWidth).length",
            selector,
        )
        assert scrolled == 0, f"{selector} scrolls sideways on {path}"
    if page_name in JOB_STATES:
        tabs = page.locator(".tabs a")
        assert tabs.count() == len(JOB_STATES)
        assert all(tab.is_visible() for tab in tabs.all())
    # Every link answers a tap where it is shown: the last one too (it leaves the page).
    page.locator(".nav a", has_text="Audit log").click()
    page.wait_for_url("**/jobs/audit/")


def test_phone_filters_say_how_many_apply_and_open_on_an_error(open_dashboard):
    seed_a_busy_hour()
    page = open_at_phone_width(open_dashboard, "/jobs/failed/")
    page.goto(page.url + "?queue=default&task=fail")
    assert page.locator(".filter-box > summary .count").inner_text() == "2"
    assert page.locator("form.filters").is_hidden()

    page.goto(page.url.split("?")[0] + "?priority=high")
    page.wait_for_load_state("networkidle")
    assert page.locator("form.filters").is_visible()
    assert page.locator(".field.invalid").is_visible()


def test_desktop_width_keeps_the_tables_and_the_open_filter_form(open_dashboard, screenshots):
    seed_a_busy_hour()
    page = open_dashboard("/jobs/failed/")
    page.set_viewport_size(DESKTOP)
    page.wait_for_load_state("networkidle")

    table = page.locator("table.jobs")
    assert table.evaluate("t => getComputedStyle(t).display") == "table"
    assert table.locator("thead th").first.is_visible()
    assert table.locator("thead th", has_text="Error").is_visible()
    row = table.locator("tbody tr").first
    assert row.evaluate("r => getComputedStyle(r).display") == "table-row"
    # One line per job: every cell of the row starts at the same height, left to right.
    tops = row.locator("td").evaluate_all(
        "cells => cells.map(c => c.getBoundingClientRect())"
        ".map(box => [Math.round(box.top), box.left])"
    )
    assert len({top for top, _ in tops}) == 1
    assert [left for _, left in tops] == sorted(left for _, left in tops)
    assert row.locator("td.error-cell").evaluate(
        "cell => getComputedStyle(cell, '::before').content"
    ) in ("none", "normal")
    # The filter form is open, with no button to fold it; no "Select all" text.
    assert page.locator(".filter-box > summary").is_hidden()
    assert page.locator("form.filters").is_visible()
    assert page.locator("#id_queue").is_visible()
    assert page.locator("th.select .narrow-only").is_hidden()
    # The navigation stays on one line beside the brand, and sticks to the top.
    nav_tops = page.locator(".nav a").evaluate_all(
        "links => links.map(a => Math.round(a.getBoundingClientRect().top))"
    )
    assert len(set(nav_tops)) == 1
    assert page.locator(".topbar").evaluate("e => getComputedStyle(e).position") == "sticky"
    save_first_screens(page, screenshots, "desktop-failed")


def test_resizing_to_phone_width_folds_the_filters_and_back_opens_them(open_dashboard):
    seed_a_busy_hour()
    page = open_dashboard("/jobs/failed/")
    assert page.locator("form.filters").is_visible()
    page.set_viewport_size(PHONE)
    page.locator("form.filters").wait_for(state="hidden")
    page.set_viewport_size(DESKTOP)
    page.locator("form.filters").wait_for(state="visible")
