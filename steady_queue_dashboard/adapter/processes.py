"""Processes as a tree of supervisors and children, and their health."""

from __future__ import annotations

from dataclasses import dataclass, field

from steady_queue.models import ClaimedExecution, Process


@dataclass
class ProcessNode:
    process: Process
    claimed: list[ClaimedExecution] = field(default_factory=list)
    children: list[ProcessNode] = field(default_factory=list)

    @property
    def is_stale(self) -> bool:
        return not self.process.is_alive()


def process_tree() -> list[ProcessNode]:
    """Return supervisors with their children, and each worker's claimed jobs."""
    nodes = {p.pk: ProcessNode(p) for p in Process.objects.order_by("pk")}
    claims = ClaimedExecution.objects.filter(process__isnull=False)
    for claim in claims.select_related("job").order_by("created_at"):
        if claim.process_id in nodes:
            nodes[claim.process_id].claimed.append(claim)
    roots = []
    for node in nodes.values():
        parent = nodes.get(node.process.supervisor_id)
        (parent.children if parent else roots).append(node)
    return roots


@dataclass(frozen=True)
class Health:
    kind: str
    total: int
    stale: int


def process_health() -> list[Health]:
    """Count processes by kind, and those whose heartbeat is overdue."""
    from .overview import health_of, process_states

    return health_of(process_states())
