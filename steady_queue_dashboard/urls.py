"""Mount with ``path("jobs/", include("steady_queue_dashboard.urls"))``.

Queue names and recurring keys are user data and may hold slashes, so a detail URL can
end in anything ("nightly/run/"). Actions therefore live under their own prefix,
``actions/<kind>/<verb>/<key>/``, which no detail URL can reach.
"""

from django.urls import path, register_converter

from steady_queue.models import states

from .listings import LISTINGS
from .views import (
    archive,
    audit_log,
    batches,
    concurrency,
    errors,
    fair_weights,
    finished_history,
    job_actions,
    job_changes,
    jobs,
    overview,
    processes,
    queues,
    rate_limits,
    recurring,
    recurring_schedules,
    retention,
    reveal,
    run_logs,
    signals,
    task_pauses,
    tasks,
    waits,
    workflows,
)


class StatusConverter:
    """A job status slug: a state's word (``states.words()``), or an old spelling of one
    (``states.ALIASES``: ``pending``, ``in-progress``), which serves the same list so that
    bookmarks keep working. Longest first: the regex must not stop at a prefix."""

    regex = "|".join(sorted([*LISTINGS, *states.ALIASES], key=len, reverse=True))

    def to_python(self, value: str) -> str:
        return states.canonical(value)

    def to_url(self, value: str) -> str:
        return value


class JobIdConverter:
    """A job id that fits the 64-bit key: a longer number is no job (404), not an overflow."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


class KeyConverter:
    """A queue name or recurring key: any text, slashes included, but never a NUL byte
    (no database column holds one, and PostgreSQL refuses the query)."""

    regex = ".+"

    def to_python(self, value: str) -> str:
        if "\x00" in value:
            raise ValueError("NUL in a key")
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(StatusConverter, "sq_status")
register_converter(JobIdConverter, "sq_job")
register_converter(KeyConverter, "sq_key")

app_name = "steady_queue_dashboard"

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("queues/", queues.queue_list, name="queue-list"),
    path("queues/<sq_key:name>/", queues.queue_detail, name="queue-detail"),
    path("<sq_status:status>/", jobs.job_list, name="job-list"),
    path("<sq_job:pk>/", jobs.job_detail, name="job-detail"),
    path("new/", job_changes.job_new, name="job-new"),
    path("<sq_job:pk>/edit/", job_changes.job_edit, name="job-edit"),
    path(
        "<sq_job:pk>/retry-with-changes/", job_changes.job_retry_changed, name="job-retry-changed"
    ),
    path("<sq_job:pk>/duplicate/", job_changes.job_duplicate, name="job-duplicate"),
    path("<sq_job:pk>/signal/", signals.job_signal, name="job-signal"),
    path("<sq_job:pk>/log/", run_logs.job_logs, name="job-logs"),
    path("actions/job/reveal/<sq_job:pk>/", reveal.job_reveal, name="job-reveal"),
    path("<sq_job:pk>/stack/<int:request_id>/", run_logs.job_stack_answer, name="job-stack-answer"),
    path("waits/", waits.wait_list, name="wait-list"),
    path("processes/", processes.process_list, name="process-list"),
    path("recurring/", recurring.recurring_list, name="recurring-list"),
    path("schedules/new/", recurring_schedules.recurring_new, name="recurring-new"),
    path("schedules/edit/<sq_key:key>/", recurring_schedules.recurring_edit, name="recurring-edit"),
    path(
        "actions/recurring/delete/<sq_key:key>/",
        recurring_schedules.recurring_delete,
        name="recurring-delete",
    ),
    path("recurring/<sq_key:key>/", recurring.recurring_detail, name="recurring-detail"),
    path("concurrency/", concurrency.concurrency, name="concurrency"),
    path("rate-limits/", rate_limits.rate_limits, name="rate-limits"),
    path("tasks/", tasks.task_list, name="tasks"),
    path("batches/", batches.batch_list, name="batch-list"),
    path("batches/<sq_job:pk>/", batches.batch_detail, name="batch-detail"),
    path("workflows/", workflows.workflow_list, name="workflow-list"),
    path("workflows/<sq_job:pk>/", workflows.workflow_detail, name="workflow-detail"),
    path("audit/", audit_log.audit_log, name="audit-log"),
    path("archive/", archive.archive_list, name="archive-list"),
    path("archive/<sq_job:pk>/", archive.archive_detail, name="archive-detail"),
    path("archive/<sq_job:pk>/restore/", archive.archive_restore, name="archive-restore"),
    path("retention/", retention.retention, name="retention"),
    path("history/", finished_history.history_list, name="history-list"),
    path("errors/", errors.error_group_list, name="error-groups"),
    path("errors/<slug:key>/<slug:action>/", errors.error_group_action, name="error-group-action"),
    # Actions (POST only), apart from every page.
    path("actions/jobs/<sq_status:status>/retry/", job_actions.jobs_retry, name="jobs-retry"),
    path("actions/jobs/<sq_status:status>/discard/", job_actions.jobs_discard, name="jobs-discard"),
    path("actions/jobs/<sq_status:status>/cancel/", job_actions.jobs_cancel, name="jobs-cancel"),
    path(
        "actions/jobs/<sq_status:status>/dispatch/",
        job_actions.jobs_dispatch,
        name="jobs-dispatch",
    ),
    path("actions/jobs/<sq_status:status>/release/", job_actions.jobs_release, name="jobs-release"),
    path("actions/job/retry/<sq_job:pk>/", job_actions.job_retry, name="job-retry"),
    path("actions/job/discard/<sq_job:pk>/", job_actions.job_discard, name="job-discard"),
    path("actions/job/cancel/<sq_job:pk>/", job_actions.job_cancel, name="job-cancel"),
    path("actions/job/dispatch/<sq_job:pk>/", job_actions.job_dispatch, name="job-dispatch"),
    path("actions/job/release/<sq_job:pk>/", job_actions.job_release, name="job-release"),
    path("actions/job/stack/<sq_job:pk>/", run_logs.job_stack, name="job-stack"),
    path("actions/queue/pause/<sq_key:name>/", queues.queue_pause, name="queue-pause"),
    path("actions/queue/resume/<sq_key:name>/", queues.queue_resume, name="queue-resume"),
    path("actions/task/pause/<sq_key:task>/", task_pauses.task_pause, name="task-pause"),
    path("actions/task/resume/<sq_key:task>/", task_pauses.task_resume, name="task-resume"),
    path("actions/fairness/weight/<sq_key:key>/", fair_weights.fair_weight_set, name="fair-weight"),
    path(
        "actions/fairness/clear/<sq_key:key>/",
        fair_weights.fair_weight_clear,
        name="fair-weight-clear",
    ),
    path("actions/recurring/run/<sq_key:key>/", recurring.recurring_run, name="recurring-run"),
    path(
        "actions/recurring/enable/<sq_key:key>/",
        recurring.recurring_enable,
        name="recurring-enable",
    ),
    path(
        "actions/recurring/disable/<sq_key:key>/",
        recurring.recurring_disable,
        name="recurring-disable",
    ),
    path(
        "actions/concurrency/release/<sq_key:key>/",
        concurrency.concurrency_release,
        name="concurrency-release",
    ),
]
