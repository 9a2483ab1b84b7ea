"""``steady_queue.labels.labels``: a task's static labels, and the labels of a block."""
