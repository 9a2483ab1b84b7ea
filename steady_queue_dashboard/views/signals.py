"""Send a signal to a durable job (``steady_queue.durable.send_signal``) from the console.

Two steps, as a job edit: the form posts, the page answers with the signal to send (its
name, the payload masked as arguments are) and a signed token of the job, the name and a
digest of the payload (``confirmation``); only the button with that token sends it, through
the engine, which may still refuse (the job ended meanwhile, a signal of that name is
already waiting): the refusal shows on the form and nothing is written. A sent signal is
audited. Needs ``steady_queue_dashboard.edit_jobs`` besides staff.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods

from .. import adapter, confirmation, instances
from ..access import EDIT_PERMISSION, guard
from ..adapter.job_edits import Refusal
from ..signal_form import SignalForm
from .rendering import acted, render_page

FOLDER = "steady_queue_dashboard/jobs/"


@require_http_methods(["GET", "HEAD", "POST"])
@guard(permission=EDIT_PERMISSION)
def job_signal(request: HttpRequest, pk: int) -> HttpResponse:
    job = adapter.find_job(pk)
    if job is None:
        raise Http404(f"No job {pk}.")
    data = request.POST if request.method == "POST" else None
    wait = adapter.durable_wait_of(job)
    form = SignalForm(data, job=job, wait=wait)
    if data is None or "edit" in data or not form.is_valid():
        return _page(request, form, job)
    facts = form.facts()
    if not confirmation.confirmed(request, **facts):
        return _page(request, form, job, facts=facts)
    name, payload = form.cleaned_data["name"], form.cleaned_data["payload"]
    try:
        outcome = adapter.send_job_signal(job, name, payload, user=request.user.get_username())
    except Refusal as exc:  # the engine refused: shown on the form, nothing written
        form.add_error(None, str(exc))
        return _page(request, form, job)
    return acted(request, outcome, instances.url("job-detail", job.pk))


def _page(request: HttpRequest, form: SignalForm, job, **context) -> HttpResponse:
    facts = context.pop("facts", None)
    if facts is not None:
        context["token"] = confirmation.token(request, **facts)
        context["changed"] = confirmation.attempted(request)
    context = {"form": form, "job": job, "wait": form.wait, **context}
    return render_page(
        request,
        FOLDER + "signal_form.html",
        context,
        fragment=FOLDER + "_signal_form.html",
        section="jobs",
    )
