"""Strategies on a synthetic graph, without a device or a store."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from kernelevolve.search.graph import Graph, GraphNode
from kernelevolve.search.strategies import MCTS, Evolve, EvolveConfig, Greedy, make_strategy


def _graph() -> Graph:
    g = Graph()
    g.add(GraphNode(1, [], "seed", "h1", {"T": 1}, "ok", True, 1.0, 1.0))
    g.add(GraphNode(2, [1], "tune", "h2", {"T": 2}, "ok", True, 2.0, 2.0, island=0))
    g.add(GraphNode(3, [1], "tune", "h3", {"T": 4}, "ok", True, 1.5, 1.5, island=1))
    g.add(GraphNode(4, [2], "tune", "h4", {"T": 8}, "incorrect", False, 0.0, None, island=0))
    return g


def test_greedy_expands_the_best_mostly():
    s = Greedy(random.Random(0), epsilon=0.1)
    picks = Counter(s.select(_graph()).parents[0] for _ in range(200))
    assert picks.most_common(1)[0][0] == 2 and 4 not in picks


def test_mcts_backpropagates_and_explores():
    g = _graph()
    s = MCTS(random.Random(0))
    child = GraphNode(-1, [2], "tune", "h5", {"T": 16}, "ok", True, 2.5, 2.5)
    updates = s.observe(g, child)
    assert set(updates) == {2, 1} and g.nodes[2].visits == 1
    # the unvisited node 3 now carries the exploration bonus over the visited ones
    g.nodes[2].visits, g.nodes[1].visits = 20, 20
    assert s.select(g).parents == [3]


def test_evolve_samples_within_islands_crosses_and_migrates():
    g = _graph()
    s = Evolve(random.Random(0), config=EvolveConfig(islands=2, migrate_every=2, crossover_p=1.0))
    islands = [s.select(g).island for _ in range(4)]
    assert islands == [0, 1, 0, 1]
    sel = s.select(g)
    assert len(sel.parents) == 2 and len(set(sel.parents)) == 2
    for _ in range(2):
        s.observe(g, GraphNode(-1, [1], "tune", "x", {}, "ok", True, 1.0, 1.0))
    assert 2 in s.state["migrants"]["1"]  # island 0's best moved to island 1
    restored = Evolve(random.Random(0), state=s.state)
    assert restored.state["migrants"] == s.state["migrants"]


def test_no_correct_node_means_nothing_to_select():
    g = Graph()
    g.add(GraphNode(1, [], "seed", "h", {}, "compile_error", False, 0.0, None))
    for name in ("greedy", "mcts", "evolve"):
        assert make_strategy(name, random.Random(0)).select(g) is None
    with pytest.raises(ValueError, match="unknown strategy"):
        make_strategy("annealing", random.Random(0))
