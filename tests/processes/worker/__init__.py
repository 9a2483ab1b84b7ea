"""Tests of the worker process and its collaborators (steady_queue.processes.worker)."""
