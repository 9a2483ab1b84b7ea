"""The ready list pages through jobs in the workers' order: fair share's order too."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from steady_queue.backend import enqueue_all
from steady_queue.models import ReadyExecution
from steady_queue.models.execution import POLL_ORDER
from steady_queue_dashboard import joblist

pytestmark = pytest.mark.django_db


def test_ready_pages_follow_the_fair_order_every_row_once(admin_client, monkeypatch, fair_share):
    monkeypatch.setattr(joblist, "PAGE_SIZE", 3)
    enqueue_all([(fair_share.weighted, ("heavy",), {"n": n}) for n in range(6)])  # steps 1/4
    enqueue_all([(fair_share.weighted, ("light",), {"n": n}) for n in range(3)])
    expected = list(ReadyExecution.objects.order_by(*POLL_ORDER).values_list("job_id", flat=True))
    url = reverse("steady_queue_dashboard:job-list", args=["ready"])

    seen, query = [], ""
    while len(seen) <= len(expected):  # a cursor read as garbage would start over
        html = admin_client.get(url + query).content.decode()
        seen += [int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html)]
        next_link = re.search(r'href="([^"]+)"[^>]*rel="next"', html)
        if not next_link:
            break
        query = "?" + next_link.group(1).split("?", 1)[1].replace("&amp;", "&")

    assert seen == expected
    assert sorted(expected) != expected  # the fair order is not the job ids'


def test_a_cursor_holds_a_float_only_for_the_fair_order():
    from steady_queue.models import Job
    from steady_queue_dashboard.keyset import Keyset
    from steady_queue_dashboard.listings import LISTINGS

    keyset = Keyset(Job.objects.all(), LISTINGS["ready"].ordering)

    assert keyset.decode(keyset.encode([0, 0.5, 3])) == [0, 0.5, 3]
    assert keyset.decode(keyset.encode([0, 0.5, 3.5])) is None
    assert keyset.decode(keyset.encode([0.5, 0.5, 3])) is None
