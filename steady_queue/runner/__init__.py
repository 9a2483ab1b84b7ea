"""Running one claimed job, from its admission to its one recorded outcome.

``perform`` is the run itself: what the models say of its admission (a cancel, the
rate limit, a claim lost while it waited), the call, one ``Outcome`` for the storage
to record. ``calling`` is the task's call (its arguments, its async path, the JSON
policy of its return value), ``ending`` what a run ends with and who is told,
``deadlines`` the watchdog of timeouts, ``cancellation`` what this process knows of
its running jobs' cancellation.
"""
