"""``steady_queue.context.set_metadata``."""
