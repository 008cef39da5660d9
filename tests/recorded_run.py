"""A recorded search for the report's tests, made in-process on the test doubles (tests/doubles.py): an evolve
search from a seed with tunables, with a scripted model through the universal operator, so the run holds roots,
drafts, refines and debugs, tune and crossover steps, failed nodes (compile error, wrong values, an unusable
answer), LLM calls with their prompt and answer files, retrieved documents and per-case timings with a roofline
floor and a device copy."""

from __future__ import annotations

import random
from pathlib import Path

from kernelevolve.llm.base import LLMClient, LLMResponse
from kernelevolve.llm.registry import Ensemble
from kernelevolve.operators.universal import UniversalOperator
from kernelevolve.platforms import get_platform
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import CaseResult, EvalResult, Status
from kernelevolve.search import session
from kernelevolve.search.session import Limits, RunSpec
from kernelevolve.store.store import Store
from tests.conftest import FIXTURES
from tests.doubles import RuleEvaluator, kernel

PROBLEM = FIXTURES / "transpose.py"
SHAPES = ({"N": 64}, {"N": 1000}, {"N": 2048})
STATUSES = {"BROKEN": Status.COMPILE_ERROR, "WRONG": Status.INCORRECT}


class CasesEvaluator(RuleEvaluator):
    """RuleEvaluator's verdicts on three shape cases: the rule's fitness on the largest case, less on the smaller
    ones (the smallest one slower than eager, so the export serves it with the reference), with torch.compile
    times, a roofline floor and a device copy on each case."""

    def evaluate(self, problem, candidate, options=None, /, **kw) -> EvalResult:
        result = super().evaluate(problem, candidate, options, **kw)
        if not result.correct:
            return result
        fitness = result.cases[0].speedup
        cases = []
        for i, shape in enumerate(SHAPES):
            speedup = fitness * (0.4, 0.8, 1.25)[i]
            eager = 0.01 * (i + 1) ** 2
            cases.append(
                CaseResult(
                    shape=shape,
                    correct=True,
                    max_abs_err=1e-7,
                    max_rel_err=1e-7,
                    t_candidate_ms=eager / speedup,
                    t_eager_ms=eager,
                    t_compile_ms=eager * 0.9,
                    speedup=speedup,
                    t_roofline_ms=eager / 40,
                    t_copy_ms=eager / 20,
                    min_bytes=4096 * (i + 1),
                )
            )
        return EvalResult(
            status=Status.OK, correct=True, cases=cases, target=result.target, versions=result.versions
        ).finalize()


class ScriptedClient(LLMClient):
    """A model that answers from a list, in order, whatever it was asked."""

    provider = "scripted"

    def __init__(self, answers: list[str]):
        super().__init__("m")
        self.answers = list(answers)
        self.calls = 0

    def complete(self, messages, *, max_tokens=8192, temperature=0.7, name=""):
        self.calls += 1
        answer = self.answers.pop(0) if self.answers else f"nothing more to try (call {self.calls})"
        return LLMResponse(text=answer, model=self.name, prompt_tokens=1200, completion_tokens=300, cost=0.01)


def fenced(source: str, note: str = "The tile changes.") -> str:
    return f"{note}\n```python\n{source}```\n"


ANSWERS = [
    fenced(kernel(16, width=2), "A draft with a middling tile."),
    fenced(kernel(2, "BROKEN = 1", width=2), "A draft that does not build."),
    fenced(kernel(64, "WRONG = 1", width=2), "A draft that computes the wrong values."),
    fenced(kernel(16, "BROKEN = 2", width=4), "A refine that does not build."),
    fenced(kernel(16, "# debugged", width=4), "The build error fixed."),
    "I cannot improve this kernel.",  # unusable: no code at all
    fenced(kernel(32, width=4), "The best tile."),
    fenced(kernel(128, "# wide", width=8), "A larger tile."),
    fenced(kernel(4, "# narrow", width=1), "A smaller tile."),
    fenced(kernel(32, "WRONG = 2", width=8), "A refine with the wrong values."),
    fenced(kernel(32, "# fixed", width=8), "The wrong values fixed."),
    fenced(kernel(64, "# again", width=4), "Another tile."),
]


def record(runs_dir: Path, budget: int = 26, more: int = 10) -> tuple[Store, str]:
    """The run, finished (lessons, the best kernel against torch.compile); returns its store and id. A first
    session searches with the model until its answers run out; a second, resumed with `more` nodes of budget
    and no model, takes tune and crossover steps."""
    seed = runs_dir.parent / "seed.py"
    seed.write_text(kernel(1, width=2))
    problem = runs_dir.parent / "transpose3.py"  # the fixture's transpose, on the three cases timed here
    problem.write_text(PROBLEM.read_text().replace("SHAPE_CASES = [", f"SHAPE_CASES = [{SHAPES[0]}, ", 1))
    store = Store(runs_dir)
    spec = RunSpec(problem, seed, strategy="evolve", llm=("scripted:m",), trials=1)
    evaluator = CasesEvaluator(statuses=STATUSES)
    opened = session.open_run(store, spec, Limits(budget=budget))
    model = UniversalOperator(
        Ensemble([(ScriptedClient(ANSWERS), 1.0)], random.Random(0)), load_problem(problem), get_platform("cpu")
    )
    # One step at a time: the same graph on every machine, whatever the threads' timing.
    driver = session.build_driver(
        opened, [evaluator], llm=model, warm_start=False, confirm_best=False, draft_steps=3, max_inflight=1
    )
    session.finish(opened, driver.run_search(), evaluator)
    resumed = session.open_run(store, spec, Limits(budget=len(store.nodes(opened.run.id)) + more))
    driver = session.build_driver(resumed, [evaluator], warm_start=False, confirm_best=False, max_inflight=1)
    session.finish(resumed, driver.run_search(), evaluator)
    return store, opened.run.id
