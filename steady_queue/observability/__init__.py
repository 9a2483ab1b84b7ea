"""What the engine tells the outside about each job: log fields and tracing spans.

``log`` holds the fields of a log record about a job and the ``steady_queue.jobs``
logger; ``tracing`` the OpenTelemetry spans of enqueues and runs. Both sit in the
foundation: they import nothing of the engine above it (the models only for
annotations), so that the models, the storage and the processes may all use them.
"""
