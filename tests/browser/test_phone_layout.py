"""The dashboard at phone width (390 px): nothing sticks out of the page sideways, and
no column of a list is squeezed to a letter per line; wide lists scroll in their table."""

from __future__ import annotations

import pytest

from steady_queue.models import Job
from tests.browser.test_dashboard import seed_a_busy_hour

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
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


@pytest.mark.parametrize("path", ["/jobs/", "/jobs/failed/"], ids=["overview", "failed"])
def test_phone_width_page_fits_and_columns_stay_readable(open_dashboard, screenshots, path):
    seed_a_busy_hour()
    assert Job.objects.filter(failed_execution__isnull=False).exists()
    page = open_dashboard(path)
    page.set_viewport_size(PHONE)
    page.reload()
    page.wait_for_load_state("networkidle")

    assert page.locator("table").count() > 0
    page_width = page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= PHONE["width"], f"{path} is {page_width} px wide at 390 px"
    assert page.evaluate(SQUEEZED_CELLS, CHARACTER_PX) == []

    name = "phone-overview" if path == "/jobs/" else "phone-failed"
    # The first screens of the page: the long failed list would make an unreadable strip.
    height = min(page.evaluate("document.documentElement.scrollHeight"), SCREENSHOT_MAX_HEIGHT)
    clip = {"x": 0, "y": 0, "width": PHONE["width"], "height": height}
    page.screenshot(path=screenshots / f"{name}.png", full_page=True, clip=clip)
