"""The per-task declarations: retries, unique jobs, rate limits, recurring tasks, keys."""
