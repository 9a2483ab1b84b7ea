"""Tests of ``steady_queue.runner``: running a claimed job, its cancellation, its timeouts."""
