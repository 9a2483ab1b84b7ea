"""A task module that fails to import: the dashboard must still show its jobs."""

raise RuntimeError("this module cannot be imported")
