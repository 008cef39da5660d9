"""The search graph in memory: a mirror of the run's nodes in the store, rebuilt from it on resume."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class GraphNode:
    id: int
    parents: list[int]
    operator: str
    source_hash: str
    params: dict[str, Any]
    status: str
    correct: bool
    fitness: float | None
    speedup: float | None
    island: int = 0
    visits: int = 0
    value_sum: float = 0.0
    children: list[int] = field(default_factory=list)

    @property
    def score(self) -> float:
        """Fitness for ranking: 0 when incorrect or untimed."""
        return (self.fitness or 0.0) if self.correct else 0.0


class Graph:
    def __init__(self) -> None:
        self.nodes: dict[int, GraphNode] = {}
        self.order: list[int] = []

    @classmethod
    def from_store(cls, rows: list[Any]) -> Graph:
        g = cls()
        g.merge(rows)
        return g

    def merge(self, rows: list[Any]) -> list[GraphNode]:
        """The stored nodes not in the graph yet added (those other processes on the run stored); returns them."""
        added = []
        for r in rows:
            if r.id in self.nodes:
                continue
            node = GraphNode(
                id=r.id,
                parents=[e.parent_id for e in r.parents],
                operator=r.operator,
                source_hash=r.source_hash,
                params=json.loads(r.params or "{}"),
                status=r.status,
                correct=r.correct,
                fitness=r.fitness,
                speedup=r.speedup,
                island=r.island,
                visits=r.visits,
                value_sum=r.value_sum,
            )
            self.add(node)
            added.append(node)
        return added

    def add(self, node: GraphNode) -> None:
        self.nodes[node.id] = node
        self.order.append(node.id)
        for p in node.parents:
            if p in self.nodes:
                self.nodes[p].children.append(node.id)

    def correct(self) -> list[GraphNode]:
        return [self.nodes[i] for i in self.order if self.nodes[i].correct]

    def best(self) -> GraphNode | None:
        """Highest fitness among correct nodes; ties go to the earliest."""
        correct = self.correct()
        return max(correct, key=lambda n: (n.score, -n.id)) if correct else None

    def ancestors(self, node_id: int) -> list[int]:
        """The primary-parent chain from the node up to its root, the node first."""
        chain, seen = [], set()
        current: int | None = node_id
        while current is not None and current not in seen:
            chain.append(current)
            seen.add(current)
            parents = self.nodes[current].parents if current in self.nodes else []
            current = parents[0] if parents else None
        return chain

    def __len__(self) -> int:
        return len(self.nodes)
