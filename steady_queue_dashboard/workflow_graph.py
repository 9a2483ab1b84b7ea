"""Lay a workflow run's steps out as an SVG graph, drawn on the server.

Each step goes in the column of its depth (the longest path from a step without
upstream steps), so that every edge points right; within a column, steps keep the order
they were added in. The drawing stays a readable size whatever the run: a column holds
at most MAX_ROWS nodes (the rest become one "+N more" node, failed steps drawn first),
and at most MAX_COLUMNS columns are drawn. The page's table lists every step anyway.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.utils.text import Truncator

from steady_queue.models import states

from .adapter.workflows import PROMINENT, STEP_STATES, Step

MAX_ROWS = 20
MAX_COLUMNS = 24
NODE_WIDTH, NODE_HEIGHT = 176, 34
COLUMN_GAP, ROW_GAP, PAD = 56, 12, 12
LABEL_LENGTH = 20
# An edge from a step in one of these to a step that never ran drew the failure on.
FAILED = (states.FAILED, states.DISCARDED, "dependency-failed")


@dataclass(frozen=True)
class Node:
    x: int
    y: int
    label: str
    step: Step | None = None  # None: a "+N more" node standing for hidden steps
    hidden: dict[str, int] = field(default_factory=dict)  # its steps, by state

    @property
    def text_x(self) -> int:
        return self.x + 10

    @property
    def text_y(self) -> int:
        return self.y + NODE_HEIGHT // 2 + 5

    @property
    def hidden_text(self) -> str:
        return ", ".join(f"{n} {STEP_STATES[state].label}" for state, n in self.hidden.items())


@dataclass(frozen=True)
class Edge:
    d: str  # the SVG path
    blocking: bool  # a failure that kept the downstream step from running


@dataclass(frozen=True)
class Graph:
    nodes: list[Node]
    edges: list[Edge]
    width: int
    height: int
    collapsed: int  # steps drawn only as part of a "+N more" node
    undrawn: int  # steps deeper than MAX_COLUMNS: in the table only

    @property
    def node_width(self) -> int:
        return NODE_WIDTH

    @property
    def node_height(self) -> int:
        return NODE_HEIGHT

    @property
    def max_rows(self) -> int:
        return MAX_ROWS


def layout(steps: list[Step]) -> Graph:
    """Place ``steps`` (with their upstream and downstream lists) on a grid; draw edges."""
    columns = _columns(steps)
    drawn, undrawn = columns[:MAX_COLUMNS], sum(len(c) for c in columns[MAX_COLUMNS:])
    rows = max((min(len(column), MAX_ROWS) for column in drawn), default=0)
    nodes: list[Node] = []
    placed: dict[int, Node] = {}  # job id -> the node that shows it
    collapsed = 0
    for depth, column in enumerate(drawn):
        shown, hidden = _split(column)
        collapsed += len(hidden)
        top = PAD + (rows - len(shown) - bool(hidden)) * (NODE_HEIGHT + ROW_GAP) // 2
        x = PAD + depth * (NODE_WIDTH + COLUMN_GAP)
        for row, step in enumerate(shown):
            node = Node(x, top + row * (NODE_HEIGHT + ROW_GAP), _label(step), step)
            nodes.append(node)
            placed[step.job_id] = node
        if hidden:
            y = top + len(shown) * (NODE_HEIGHT + ROW_GAP)
            more = Node(x, y, f"+{len(hidden)}", hidden=_counts(hidden))
            nodes.append(more)
            placed |= dict.fromkeys((step.job_id for step in hidden), more)
    width = PAD * 2 + max(len(drawn), 1) * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP
    height = PAD * 2 + max(rows, 1) * (NODE_HEIGHT + ROW_GAP) - ROW_GAP
    return Graph(nodes, _edges(steps, placed), width, height, collapsed, undrawn)


def _columns(steps: list[Step]) -> list[list[Step]]:
    """Group steps by depth: the longest path to them from a step with no upstream."""
    depth = {step.job_id: 0 for step in steps}
    remaining = {step.job_id: len(step.upstream) for step in steps}
    ready = [step for step in steps if not step.upstream]
    while ready:  # Kahn's order: a step's depth is final once all its upstream are placed
        step = ready.pop()
        for down in step.downstream:
            depth[down.job_id] = max(depth[down.job_id], depth[step.job_id] + 1)
            remaining[down.job_id] -= 1
            if remaining[down.job_id] == 0:
                ready.append(down)
    columns: list[list[Step]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for step in steps:  # in the order they were added
        columns[depth[step.job_id]].append(step)
    return columns


def _split(column: list[Step]) -> tuple[list[Step], list[Step]]:
    if len(column) <= MAX_ROWS:
        return column, []
    first = sorted(column, key=lambda step: step.state not in PROMINENT)  # stable
    return first[: MAX_ROWS - 1], first[MAX_ROWS - 1 :]


def _counts(steps: list[Step]) -> dict[str, int]:
    counts = Counter(step.state for step in steps)
    return {state: counts[state] for state in STEP_STATES if counts[state]}


def _label(step: Step) -> str:
    return f"{step.state_info.symbol} {Truncator(step.name).chars(LABEL_LENGTH)}"


def _edges(steps: list[Step], placed: dict[int, Node]) -> list[Edge]:
    seen: dict[tuple[int, int, int, int], bool] = {}
    for step in steps:
        for up in step.upstream:
            start, end = placed.get(up.job_id), placed.get(step.job_id)
            if start is None or end is None or start is end:
                continue
            key = (start.x, start.y, end.x, end.y)
            blocking = step.state == "dependency-failed" and up.state in FAILED
            seen[key] = seen.get(key, False) or blocking
    return [_edge(*key, blocking) for key, blocking in seen.items()]


def _edge(x1: int, y1: int, x2: int, y2: int, blocking: bool) -> Edge:
    # From the middle of the upstream node's right side to the downstream's left side.
    x1, y1, y2 = x1 + NODE_WIDTH, y1 + NODE_HEIGHT // 2, y2 + NODE_HEIGHT // 2
    bend = (x1 + x2) // 2
    return Edge(f"M{x1} {y1} C{bend} {y1} {bend} {y2} {x2 - 4} {y2}", blocking)
