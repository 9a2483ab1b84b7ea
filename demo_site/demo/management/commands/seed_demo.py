import logging

from django.core.management.base import BaseCommand

from demo import seeding
from steady_queue.models import Job


class Command(BaseCommand):
    help = (
        "Fill the queue with demo jobs: finished, failed (with tracebacks), ready in several "
        "queues and priorities, waiting in a paused queue, scheduled for later, long-running "
        "with progress, and blocked behind a concurrency limit. "
        "Does nothing if jobs already exist, unless --reset is given."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--reset", action="store_true", help="Delete every job first, then seed again."
        )

    def handle(self, *args, reset: bool = False, **options):
        if reset:
            seeding.reset()
        elif Job.objects.exists():
            self.stdout.write("Demo jobs are already there; run with --reset to start over.")
            return
        # The seed runs jobs that fail on purpose; their tracebacks belong in the dashboard.
        logging.disable(logging.CRITICAL)
        try:
            counts = seeding.seed()
        finally:
            logging.disable(logging.NOTSET)
        # Jobs start running, and the scheduler stores its recurring tasks, once the
        # supervisor starts: leave out what is still zero rather than print "0 in progress".
        summary = ", ".join(f"{count} {state}" for state, count in counts.items() if count)
        self.stdout.write(self.style.SUCCESS(f"Seeded demo jobs: {summary}."))
