"""Reveal an encrypted job's data (``steady_queue.encryption``): a POST, audited each time.

Every other page shows an encrypted task's arguments, result, errors, metadata and log
as "encrypted". A user with ``steady_queue_dashboard.reveal_arguments`` asks for them
here; the answer is rendered once (never cached: the guard says so) and the reveal is
written to the audit log, whether or not a key opened the data.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from .. import adapter, audit, instances
from ..access import REVEAL_PERMISSION, guard
from .rendering import render_page


@require_POST
@guard(permission=REVEAL_PERMISSION)
def job_reveal(request: HttpRequest, pk: int) -> HttpResponse:
    job = adapter.find_job(pk)
    context = {"job": job, "job_id": pk, "revealed": None}
    if job is not None and adapter.is_encrypted_job(job):
        context["revealed"] = adapter.reveal(job)
        outcome = adapter.Outcome(True, f"Revealed the encrypted data of job {pk}.", affected=1)
        link = instances.url("job-detail", pk)
        details = {"task": job.task_path, "job": pk, "queue": job.queue_name}
        audit.record(request, "reveal", f"job {pk}", outcome, link=link, details=details)
    return render_page(
        request,
        "steady_queue_dashboard/jobs/reveal.html",
        context,
        fragment="steady_queue_dashboard/jobs/_reveal.html",
        section="jobs",
        status=404 if job is None else 200,
    )
