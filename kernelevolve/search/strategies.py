"""Search strategies behind one small interface: which node(s) to expand next.

`select` returns the parents of the next proposal: one parent means mutate it, two mean cross them.
`observe` sees every stored node; what a strategy must remember across a crash it keeps in `state`
(JSON, committed with each node) or in the nodes themselves (MCTS visit counts).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from kernelevolve.search.graph import Graph, GraphNode


@dataclass
class Selection:
    parents: list[int]
    island: int = 0


class Strategy:
    name = "base"

    def __init__(self, rng: random.Random, state: dict[str, Any] | None = None):
        self.rng = rng
        self.state: dict[str, Any] = dict(state or {})

    def select(self, graph: Graph) -> Selection | None:
        raise NotImplementedError

    def observe(self, graph: Graph, node: GraphNode) -> dict[int, tuple[int, float]]:
        """Called once per new node; returns visit/value increments to persist (MCTS), else {}."""
        return {}


class Greedy(Strategy):
    """Expand the best correct node; now and then (epsilon) a random correct one, to get off plateaus."""

    name = "greedy"

    def __init__(self, rng: random.Random, state: dict[str, Any] | None = None, epsilon: float = 0.15):
        super().__init__(rng, state)
        self.epsilon = epsilon

    def select(self, graph: Graph) -> Selection | None:
        correct = graph.correct()
        if not correct:
            return None
        if self.rng.random() < self.epsilon:
            return Selection([self.rng.choice(correct).id])
        return Selection([graph.best().id])


class MCTS(Strategy):
    """UCT over the graph: every correct node is an arm whose value is the mean normalised fitness of its
    descendants (rewards are fitness / best fitness so far); unexplored nodes get the exploration bonus."""

    name = "mcts"

    def __init__(self, rng: random.Random, state: dict[str, Any] | None = None, c: float = 1.0):
        super().__init__(rng, state)
        self.c = c

    def select(self, graph: Graph) -> Selection | None:
        correct = graph.correct()
        if not correct:
            return None
        total = sum(n.visits for n in correct) + 1
        best = graph.best().score or 1.0

        def uct(n: GraphNode) -> float:
            own = n.score / best
            mean = n.value_sum / n.visits if n.visits else own
            return mean + self.c * math.sqrt(math.log(total + 1) / (1 + n.visits)) + 1e-9 * self.rng.random()

        return Selection([max(correct, key=uct).id])

    def observe(self, graph: Graph, node: GraphNode) -> dict[int, tuple[int, float]]:
        if not node.parents:
            return {}
        best = graph.best()
        reward = node.score / best.score if best and best.score else 0.0
        updates = {}
        for ancestor in graph.ancestors(node.parents[0]):
            graph.nodes[ancestor].visits += 1
            graph.nodes[ancestor].value_sum += reward
            updates[ancestor] = (1, reward)
        return updates


@dataclass
class EvolveConfig:
    islands: int = 2
    migrate_every: int = 8  # evaluations between migrations
    crossover_p: float = 0.3
    temperature: float = 0.2  # of the fitness softmax, relative to the best fitness
    usage_penalty: float = 0.5  # weight divided by (1 + penalty * children)
    params: dict[str, Any] = field(default_factory=dict)


class Evolve(Strategy):
    """Islands with periodic migration of each island's best to the next; parents sampled by a fitness
    softmax, divided by how often a node was already used and boosted for parameter novelty; crossover
    between two parents of one island."""

    name = "evolve"

    def __init__(self, rng: random.Random, state: dict[str, Any] | None = None, config: EvolveConfig | None = None):
        super().__init__(rng, state)
        self.config = config or EvolveConfig()
        self.state.setdefault("migrants", {str(i): [] for i in range(self.config.islands)})
        self.state.setdefault("next_island", 0)
        self.state.setdefault("since_migration", 0)

    def _population(self, graph: Graph, island: int) -> list[GraphNode]:
        migrants = set(self.state["migrants"].get(str(island), []))
        return [n for n in graph.correct() if n.island == island or n.id in migrants or not n.parents]

    def _weights(self, pop: list[GraphNode]) -> list[float]:
        best = max(n.score for n in pop) or 1.0
        t = self.config.temperature
        counts: dict[tuple, int] = {}
        for n in pop:
            key = tuple(sorted(n.params.items()))
            counts[key] = counts.get(key, 0) + 1
        weights = []
        for n in pop:
            fit = math.exp((n.score / best - 1.0) / t)
            usage = 1.0 / (1.0 + self.config.usage_penalty * len(n.children))
            novelty = 1.0 / counts[tuple(sorted(n.params.items()))]
            weights.append(fit * usage * (0.5 + 0.5 * novelty))
        return weights

    def select(self, graph: Graph) -> Selection | None:
        island = self.state["next_island"]
        self.state["next_island"] = (island + 1) % self.config.islands
        pop = self._population(graph, island)
        if not pop:
            return None
        weights = self._weights(pop)
        first = self.rng.choices(pop, weights)[0]
        if len(pop) > 1 and self.rng.random() < self.config.crossover_p:
            others = [(n, w) for n, w in zip(pop, weights) if n.id != first.id]
            second = self.rng.choices([n for n, _ in others], [w for _, w in others])[0]
            return Selection([first.id, second.id], island)
        return Selection([first.id], island)

    def observe(self, graph: Graph, node: GraphNode) -> dict[int, tuple[int, float]]:
        self.state["since_migration"] += 1
        if self.state["since_migration"] >= self.config.migrate_every:
            self.state["since_migration"] = 0
            for i in range(self.config.islands):
                pop = [n for n in self._population(graph, i) if n.score > 0]
                if pop:
                    best = max(pop, key=lambda n: n.score)
                    target = self.state["migrants"].setdefault(str((i + 1) % self.config.islands), [])
                    if best.id not in target:
                        target.append(best.id)
        return {}


STRATEGIES: dict[str, type[Strategy]] = {s.name: s for s in (Greedy, MCTS, Evolve)}


def make_strategy(name: str, rng: random.Random, state: dict[str, Any] | None = None) -> Strategy:
    try:
        return STRATEGIES[name](rng, state)
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}: choose one of {', '.join(STRATEGIES)}") from None
