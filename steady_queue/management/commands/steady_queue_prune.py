"""``manage.py steady_queue_prune [--dry-run]``: apply the retention rules now."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from steady_queue.ops import backends
from steady_queue.retention.pruning import Pruning, Removed


class Command(BaseCommand):
    help = (
        "Delete (or archive) the jobs the retention rules (steady_queue.retention_rules) no "
        "longer keep, and the batches, workflow runs, task rollups, rate limit windows and "
        "unique locks kept by age, a batch at a time, as the dispatchers do. --dry-run "
        "prints per rule what would be removed and writes nothing. Exit status 2 for bad "
        "rules or a bad --backend, nothing removed."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Count what each rule would remove; write nothing.",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=None,
            help="Rows a batch deletes (default: steady_queue.prune_batch_size).",
        )
        backends.add_argument(parser)

    def handle(self, *args, **options) -> None:
        size = options["batch_size"]
        if size is not None and size < 1:
            raise CommandError("--batch-size must be at least 1.", returncode=backends.USAGE_ERROR)
        try:
            target = backends.resolve(options["backend"])
        except backends.BackendError as exc:
            raise CommandError(str(exc), returncode=backends.USAGE_ERROR) from exc
        with target.active():
            try:
                pruning = Pruning(batch_size=size)
            except ImproperlyConfigured as exc:
                raise CommandError(str(exc), returncode=backends.USAGE_ERROR) from exc
            if options["dry_run"]:
                self._show(pruning.dry_run(), "would remove")
            else:
                self._show(pruning.run(), "removed")

    def _show(self, results: list[Removed], verb: str) -> None:
        self.stdout.write(f"{'RULE':<56} {'KIND':<20} {verb.upper():>13} {'ARCHIVED':>9}")
        for result in results:
            self.stdout.write(
                f"{result.rule:<56} {result.kind:<20} {result.removed:>13} {result.archived:>9}"
            )
        total = sum(result.removed for result in results)
        self.stdout.write(f"{'Total':<56} {'':<20} {total:>13}")
