"""Pause a task: its jobs wait, on every queue, until it resumes.

``pause_task("app.tasks.export")`` (or the task object) stops workers from starting jobs
of that task; enqueueing still works, and its jobs wait as ``paused`` (not blocked, no
attempt counted) until ``resume_task``, when they run in their original order. Queue
pauses (``Queue.pause``) stop a whole queue; a task pause stops one task everywhere.
Each call acts on the queue database of the current backend (``steady_queue.database``,
or the one ``db.using_alias`` chose). See docs/reference/task-pauses.md.
"""

from .exceptions import TaskPauseError
from .models.task_pause import pause_task, paused_tasks, resume_task, task_path_of

__all__ = ["TaskPauseError", "pause_task", "paused_tasks", "resume_task", "task_path_of"]
