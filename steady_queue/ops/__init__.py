"""What the operations commands (``steady_queue_jobs``, ``steady_queue_queues``) share."""
