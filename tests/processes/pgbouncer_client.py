"""What the PgBouncer tests run in a ``manage.py shell`` behind PgBouncer: enqueue, browse.

Each function prints one JSON line for the test to read.
"""

from __future__ import annotations

import json
from datetime import timedelta

from steady_queue.backend import enqueue_all
from tests import tasks


def enqueue_mix() -> None:
    """Single, bulk, scheduled, failing and concurrency-limited jobs."""
    ids = [tasks.add.enqueue(i, i).id for i in range(20)]
    ids += [r.id for r in enqueue_all([(tasks.add, (i, 1), {}) for i in range(100)])]
    later = tasks.add.using(run_after=timedelta(seconds=1))
    ids += [later.enqueue(i, 2).id for i in range(5)]
    ids += [tasks.explode.enqueue(f"boom {i}").id for i in range(2)]
    ids += [tasks.limited.enqueue("through-pgbouncer").id for _ in range(4)]
    print(json.dumps({"ids": ids}))


def browse_dashboard(job_id: str, failed_id: str) -> None:
    """Every dashboard page, and pausing and resuming a queue, as a superuser."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from steady_queue.models import Pause

    user, _ = get_user_model().objects.get_or_create(
        username="pgbouncer-admin", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    pages = [
        "/jobs/",
        "/jobs/failed/",
        "/jobs/finished/",
        f"/jobs/{job_id}/",
        f"/jobs/{failed_id}/",
        "/jobs/queues/",
        "/jobs/processes/",
        "/jobs/recurring/",
        "/jobs/concurrency/",
        "/jobs/errors/",
        "/jobs/audit/",
    ]
    statuses = {page: client.get(page).status_code for page in pages}
    client.post("/jobs/actions/queue/pause/low/")
    paused = Pause.objects.filter(queue_name="low").exists()
    client.post("/jobs/actions/queue/resume/low/")
    resumed = not Pause.objects.filter(queue_name="low").exists()
    print(json.dumps({"statuses": statuses, "paused": paused, "resumed": resumed}))
