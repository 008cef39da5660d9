"""The tune operator: mutate and cross a kernel's tunable parameters, no LLM.

Tunables are module-level integer constants named in `TUNABLES = {"BLOCK": [32, 64, 128], ...}`. Without
`TUNABLES` they are inferred: integer keyword arguments of Triton launches (`kernel[grid](..., BLOCK=1024,
num_warps=4)`), directly or through a module-level constant. Sources are edited in place at the value's
position, so everything else in the file is left exactly as it was.
"""

from __future__ import annotations

import ast
import itertools
import random
from dataclasses import dataclass

from kernelevolve.operators.base import Proposal, Request
from kernelevolve.problem.problem import parse, source_hash
from kernelevolve.result import EvalResult

LAUNCH_CHOICES = {"num_warps": [1, 2, 4, 8, 16, 32], "num_stages": [1, 2, 3, 4, 5]}


class TuneError(Exception):
    """The source has no tunable parameters, or they cannot be rewritten."""


@dataclass(frozen=True)
class Tunable:
    name: str
    choices: tuple[int, ...]
    value: int
    spans: tuple[tuple[int, int, int], ...]  # (line, col, end_col) of each literal holding the value


def find_tunables(source: str) -> dict[str, Tunable]:
    tree = parse(source)
    consts = _module_int_constants(tree)
    declared = _declared_tunables(tree)
    if declared is not None:
        out = {}
        for name, choices in declared.items():
            if name not in consts:
                raise TuneError(f"TUNABLES names {name}, but there is no module-level integer constant {name}")
            value, span = consts[name]
            out[name] = Tunable(name, tuple(sorted(set(choices) | {value})), value, (span,))
        return out
    return _inferred_tunables(tree, consts)


def _module_int_constants(tree: ast.Module) -> dict[str, tuple[int, tuple[int, int, int]]]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = node.value
            if isinstance(v, ast.Constant) and type(v.value) is int:
                out[node.targets[0].id] = (v.value, (v.lineno, v.col_offset, v.end_col_offset))
    return out


def _declared_tunables(tree: ast.Module) -> dict[str, list[int]] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TUNABLES" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError as e:
                raise TuneError("TUNABLES must be a literal dict of name -> list of ints") from e
            if not isinstance(value, dict) or not all(
                isinstance(v, (list, tuple)) and v and all(type(x) is int for x in v) for v in value.values()
            ):
                raise TuneError("TUNABLES must be a literal dict of name -> list of ints")
            return {k: list(v) for k, v in value.items()}
    return None


def _inferred_tunables(tree: ast.Module, consts: dict) -> dict[str, Tunable]:
    found: dict[str, Tunable] = {}
    literal_spans: dict[str, list[tuple[int, int, int]]] = {}
    literal_values: dict[str, int] = {}
    for node in ast.walk(tree):
        # kernel[grid](...): a Call whose func is a Subscript
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
            continue
        for kw in node.keywords:
            if kw.arg is None:
                continue
            is_launch_kw = kw.arg in LAUNCH_CHOICES or kw.arg.isupper()
            if not is_launch_kw:
                continue
            if isinstance(kw.value, ast.Constant) and type(kw.value.value) is int:
                v = kw.value
                literal_spans.setdefault(kw.arg, []).append((v.lineno, v.col_offset, v.end_col_offset))
                literal_values.setdefault(kw.arg, v.value)
            elif isinstance(kw.value, ast.Name) and kw.value.id in consts:
                value, span = consts[kw.value.id]
                found[kw.value.id] = Tunable(kw.value.id, _neighbourhood(kw.arg, value), value, (span,))
    for name, spans in literal_spans.items():
        if name not in found:
            value = literal_values[name]
            found[name] = Tunable(name, _neighbourhood(name, value), value, tuple(spans))
    return found


def _neighbourhood(kind: str, value: int) -> tuple[int, ...]:
    if kind in LAUNCH_CHOICES:
        return tuple(sorted(set(LAUNCH_CHOICES[kind]) | {value}))
    if value > 0 and value & (value - 1) == 0:  # a power of two: a block size
        return tuple(v for v in (value // 8, value // 4, value // 2, value, value * 2, value * 4, value * 8) if v >= 1)
    return (value,)


def apply(source: str, values: dict[str, int]) -> str:
    """The source with the given tunables set to new values."""
    tunables = find_tunables(source)
    edits: list[tuple[int, int, int, str]] = []
    for name, value in values.items():
        if name not in tunables:
            raise TuneError(f"{name} is not a tunable of this kernel")
        edits.extend((line, col, end, str(value)) for line, col, end in tunables[name].spans)
    lines = source.splitlines(keepends=True)
    for line, col, end, text in sorted(edits, reverse=True):  # right to left keeps earlier offsets valid
        raw = lines[line - 1].encode()
        lines[line - 1] = (raw[:col] + text.encode() + raw[end:]).decode()
    return "".join(lines)


def current_values(source: str) -> dict[str, int]:
    return {name: t.value for name, t in find_tunables(source).items()}


def mutate(source: str, rng: random.Random, resample_p: float = 0.2) -> tuple[str, dict[str, int]]:
    """Move one or two tunables to a neighbouring allowed value (sometimes a random one)."""
    tunables = {n: t for n, t in find_tunables(source).items() if len(t.choices) > 1}
    if not tunables:
        raise TuneError("the kernel has no tunable parameters (no TUNABLES and nothing to infer)")
    names = rng.sample(sorted(tunables), k=min(len(tunables), rng.choice([1, 1, 2])))
    changes = {}
    for name in names:
        t = tunables[name]
        i = t.choices.index(t.value)
        if rng.random() < resample_p:
            j = rng.randrange(len(t.choices))
        else:
            j = i + rng.choice([-1, 1])
            j = min(max(j, 0), len(t.choices) - 1)
            if j == i:
                j = i - 1 if i > 0 else i + 1
        changes[name] = t.choices[j]
    new = apply(source, changes)
    return new, current_values(new)


def crossover(source_a: str, source_b: str, rng: random.Random) -> tuple[str, dict[str, int]]:
    """Each tunable from one parent or the other, on parent A's code; needs the same tunables in both."""
    a, b = current_values(source_a), current_values(source_b)
    if set(a) != set(b) or not a:
        raise TuneError("crossover needs two parents with the same tunable parameters")
    child = {name: (a[name] if rng.random() < 0.5 else b[name]) for name in a}
    new = apply(source_a, child)
    return new, current_values(new)


def has_tunables(source: str) -> bool:
    try:
        return bool(find_tunables(source))
    except (TuneError, SyntaxError):
        return False


def params_of(source: str) -> dict[str, int]:
    """A kernel's tunable values, {} for a kernel without any (what a node records as its params)."""
    return current_values(source) if has_tunables(source) else {}


MAX_PROPOSAL_TRIES = 25
ENUMERATION_LIMIT = 100_000


class TuneOperator:
    """The tune operator behind the driver's `Propose` port: a mutation of one parent, or a crossover of two."""

    name = "tune"
    cost = 0.0

    def propose(self, request: Request) -> Proposal:
        """A candidate no node has; after a repeat, asks the driver for another selection (request.reselect)."""
        for attempt in range(MAX_PROPOSAL_TRIES):
            if attempt and request.reselect is not None:
                request = request.reselect() or request
            parents = request.parents
            try:
                if len(request.sources) == 2:
                    try:
                        source, params = crossover(request.sources[0], request.sources[1], request.rng)
                        operator = "crossover"
                    except TuneError:
                        source, params = mutate(request.sources[0], request.rng)
                        operator, parents = "tune", parents[:1]
                else:
                    source, params = mutate(request.sources[0], request.rng)
                    operator = "tune"
            except TuneError as e:
                return Proposal("tune", parents, stop=f"cannot tune: {e}")
            h = source_hash(source)
            if h not in request.known:
                before = current_values(request.sources[0])
                changed = {k: v for k, v in params.items() if before.get(k) != v}
                strategy = f"{operator}: " + ", ".join(f"{k}={v}" for k, v in sorted(changed.items()))
                return Proposal(operator, parents, source, h, params, request.island, strategy=strategy)
        untried = self._untried(request)
        if untried is not None:
            return untried
        return Proposal(
            "tune",
            request.parents,
            stop="search space exhausted: every setting of the kernel's tunables has been tried",
        )

    def _untried(self, request: Request) -> Proposal | None:
        """Random steps found only known kernels: a setting not yet tried, by enumeration of the parent's space
        (in random order, at most ENUMERATION_LIMIT settings), so "exhausted" means that every one was tried."""
        if not request.sources:
            return None
        tunables = find_tunables(request.sources[0])
        names = sorted(tunables)
        settings = list(itertools.islice(itertools.product(*(tunables[n].choices for n in names)), ENUMERATION_LIMIT))
        request.rng.shuffle(settings)
        before = current_values(request.sources[0])
        for values in settings:
            params = dict(zip(names, values))
            source = apply(request.sources[0], params)
            h = source_hash(source)
            if h not in request.known:
                changed = ", ".join(f"{k}={v}" for k, v in sorted(params.items()) if before.get(k) != v)
                parents = request.parents[:1]
                return Proposal("tune", parents, source, h, params, request.island, strategy=f"tune: {changed}")
        return None

    def feedback(self, proposal: Proposal, result: EvalResult | None) -> None:
        """Nothing to learn: the strategy's selection carries what worked."""

    def stop_reason(self) -> str:
        return ""
