"""Mount with ``path("jobs/", include("steady_queue_dashboard.urls"))``."""

from django.urls import path, register_converter

from .listings import LISTINGS
from .views import (
    audit_log,
    concurrency,
    job_actions,
    jobs,
    overview,
    processes,
    queues,
    recurring,
)


class StatusConverter:
    """A job status slug: pending, scheduled, in-progress, blocked, failed or finished."""

    regex = "|".join(LISTINGS)

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(StatusConverter, "sq_status")

app_name = "steady_queue_dashboard"

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("queues/", queues.queue_list, name="queue-list"),
    # Names and keys may hold slashes: the actions come first so that they win.
    path("queues/<path:name>/pause/", queues.queue_pause, name="queue-pause"),
    path("queues/<path:name>/resume/", queues.queue_resume, name="queue-resume"),
    path("queues/<path:name>/", queues.queue_detail, name="queue-detail"),
    path("<sq_status:status>/", jobs.job_list, name="job-list"),
    path("<sq_status:status>/retry/", job_actions.jobs_retry, name="jobs-retry"),
    path("<sq_status:status>/discard/", job_actions.jobs_discard, name="jobs-discard"),
    path("<sq_status:status>/dispatch/", job_actions.jobs_dispatch, name="jobs-dispatch"),
    path("<int:pk>/", jobs.job_detail, name="job-detail"),
    path("<int:pk>/retry/", job_actions.job_retry, name="job-retry"),
    path("<int:pk>/discard/", job_actions.job_discard, name="job-discard"),
    path("<int:pk>/dispatch/", job_actions.job_dispatch, name="job-dispatch"),
    path("<int:pk>/release/", job_actions.job_release, name="job-release"),
    path("processes/", processes.process_list, name="process-list"),
    path("recurring/", recurring.recurring_list, name="recurring-list"),
    path("recurring/<path:key>/run/", recurring.recurring_run, name="recurring-run"),
    path("recurring/<path:key>/enable/", recurring.recurring_enable, name="recurring-enable"),
    path("recurring/<path:key>/disable/", recurring.recurring_disable, name="recurring-disable"),
    path("recurring/<path:key>/", recurring.recurring_detail, name="recurring-detail"),
    path("concurrency/", concurrency.concurrency, name="concurrency"),
    path(
        "concurrency/<path:key>/release/",
        concurrency.concurrency_release,
        name="concurrency-release",
    ),
    path("audit/", audit_log.audit_log, name="audit-log"),
]
