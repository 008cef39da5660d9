"""Where each node of the search graph is drawn: a tidy tree over first parents (a crossover's second parent is an
extra edge), roots side by side in the order they were made, children below their parent."""

from __future__ import annotations

from collections.abc import Sequence


def tree_layout(nodes: Sequence[tuple[int, Sequence[int]]]) -> dict[int, tuple[float, int]]:
    """(node id, parent ids) in the order the nodes were made -> (x, depth) per node. Leaves take consecutive
    columns, a parent sits over the middle of its children, and a node's depth is its first parent's plus one; a
    parent outside the list (another run's node) makes the node a root. Iterative: a greedy chain of thousands of
    nodes is as deep as it is long."""
    ids = {node_id for node_id, _ in nodes}
    children: dict[int, list[int]] = {node_id: [] for node_id, _ in nodes}
    roots = []
    for node_id, parents in nodes:
        first = next((p for p in parents if p in ids and p != node_id), None)
        if first is None:
            roots.append(node_id)
        else:
            children[first].append(node_id)
    out: dict[int, tuple[float, int]] = {}
    column = 0
    for root in roots:
        stack: list[tuple[int, int, bool]] = [(root, 0, False)]
        while stack:
            node_id, depth, placed_children = stack.pop()
            kids = children[node_id]
            if not kids:
                out[node_id] = (float(column), depth)
                column += 1
            elif placed_children:
                out[node_id] = ((out[kids[0]][0] + out[kids[-1]][0]) / 2, depth)
            else:
                stack.append((node_id, depth, True))
                stack.extend((kid, depth + 1, False) for kid in reversed(kids))
    for node_id, _ in nodes:  # unreachable from any root: only a store with a cycle of parents has them
        if node_id not in out:
            out[node_id] = (float(column), 0)
            column += 1
    return out
