"""The search driver and the session on test doubles: stop rules, dedup, the draft phase, failure counting,
replay, resume and crossover, in-process and in milliseconds (tests/doubles.py; no worker, no build)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelevolve.llm.base import LLMClient, LLMError, LLMResponse
from kernelevolve.llm.registry import Ensemble
from kernelevolve.operators.universal import UniversalOperator
from kernelevolve.platforms import get_platform
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from kernelevolve.search import session
from kernelevolve.search.driver import MACHINE_RETRIES, Driver, SearchConfig
from kernelevolve.search.session import Limits, RunSpec, SessionError
from kernelevolve.search.strategies import make_strategy
from kernelevolve.store.store import Store
from tests.conftest import FIXTURES, ROOT
from tests.doubles import RuleEvaluator, ScriptedOperator, kernel, tile_rule

PROBLEM = FIXTURES / "transpose.py"


@pytest.fixture
def seed(tmp_path):
    path = tmp_path / "seed.py"
    path.write_text(kernel(1))
    return path


def search(store, spec, limits, evaluator=None, llm=None, **kw):
    """confirm_best off by default: these tests count evaluations; its own test turns it on."""
    kw.setdefault("confirm_best", False)
    opened = session.open_run(store, spec, limits)
    evaluator = evaluator or RuleEvaluator()
    driver = session.build_driver(opened, [evaluator], llm=llm, warm_start=False, **kw)
    reason = driver.run_search()
    return opened, driver, reason, session.finish(opened, reason, evaluator)


def test_the_tune_operator_finds_the_tile_the_rule_favours(tmp_path, seed):
    spec = RunSpec(PROBLEM, seed, trials=1)
    opened, driver, reason, out = search(Store(tmp_path), spec, Limits(budget=6))
    assert reason == "budget of 6 nodes reached" and out.evaluations == 6
    assert out.seed_fitness == pytest.approx(tile_rule(kernel(1)))
    assert out.best_fitness > 2 * out.seed_fitness and "TILE = 1\n" not in open(out.best_kernel).read()
    rows = opened.store.nodes(opened.run.id)
    assert [r.step for r in rows] == list(range(1, 7)) and len({r.source_hash for r in rows}) == 6
    assert {r.operator for r in rows} == {"seed", "tune"}
    analysis = opened.store.analysis(rows[1].id)
    assert analysis["strategy"].startswith("tune: TILE=")


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        (Limits(budget=50, stall=3), "no improvement in 3 nodes"),
        (Limits(budget=50, target_speedup=0.9), "target speedup 0.9x reached"),
        (Limits(budget=50, time_s=0.0), "time limit of 0 s reached"),
    ],
)
def test_stop_rules(tmp_path, seed, limits, reason):
    seed.write_text(kernel(1, width=2))
    _, driver, stopped, out = search(Store(tmp_path), RunSpec(PROBLEM, seed), limits)
    assert stopped == reason
    if limits.time_s == 0.0:
        assert out.evaluations == 1  # the seed is evaluated before any rule is asked


def test_a_seed_that_is_not_correct_stops_before_searching(tmp_path, seed):
    seed.write_text(kernel(1, "BROKEN = 1"))
    evaluator = RuleEvaluator(statuses={"BROKEN": Status.COMPILE_ERROR})
    _, _, reason, out = search(Store(tmp_path), RunSpec(PROBLEM, seed), Limits(budget=5), evaluator)
    assert reason == "the seed kernel is not correct (compile_error); fix it before searching"
    assert out.evaluations == 1 and out.best_node is None


@pytest.mark.parametrize("width", [None, 4])
def test_the_space_is_exhausted_only_when_every_setting_was_tried(tmp_path, width):
    """Random steps soon repeat known kernels in a small space; the tune operator then enumerates what is left."""
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1, width=width))
    size = 8 * (4 if width else 1)
    _, _, reason, out = search(Store(tmp_path), RunSpec(PROBLEM, seed), Limits(budget=size + 5))
    assert reason == "search space exhausted: every setting of the kernel's tunables has been tried"
    assert out.evaluations == size and out.best_fitness == pytest.approx(2.0)


def test_llm_drafts_first_then_refines_and_duplicates_make_no_node(tmp_path, seed):
    evaluator = RuleEvaluator()
    llm = ScriptedOperator([kernel(4), kernel(8), kernel(8), kernel(16), kernel(64)], cost=0.5)
    opened, driver, reason, out = search(
        Store(tmp_path), RunSpec(PROBLEM, seed, llm=("scripted:x",)), Limits(budget=5), evaluator, llm, draft_steps=2
    )
    drafts = [r for r in llm.requests if not r.parents]
    assert len(drafts) >= 2 and [r.draft_index for r in drafts[:2]] == [1, 2]
    refines = [r for r in llm.requests if r.parents]
    assert refines and all(r.parent is not None and r.parent.id == r.parents[0] for r in refines)
    assert refines[0].parent.source == driver.sources[refines[0].parents[0]]
    assert [e.count("TILE = 8\n") for e in evaluator.evaluated].count(1) == 1  # the repeat was never evaluated
    duplicates = [p for p, result in llm.feedback_got if result is None]
    assert len(duplicates) == 1 and duplicates[0].note.startswith("duplicate")
    assert out.evaluations == 5 and reason == "budget of 5 nodes reached"
    assert driver.cost == pytest.approx(0.5 * len(llm.requests))
    ops = [r.operator for r in opened.store.nodes(opened.run.id)]
    assert ops[0] == "seed" and ops[1:3] == ["llm-draft", "llm-draft"]


@pytest.mark.parametrize("target", ["cuda", "cpu"])
def test_extensions_are_built_before_their_evaluation_takes_a_gpu(tmp_path, seed, target):
    """On the H200 a model's CUDA drafts spent 60 s each on nvcc, one after another, with the GPU idle; and a
    build still running when the device came free held the device while other evaluations waited. Every draft
    that builds an extension now has it built first (the pool's builder), and only then takes a device (GPU
    targets; on the cpu target a build would take the cores being timed)."""
    order: list[tuple[str, str]] = []

    class Recording(RuleEvaluator):
        def evaluate(self, problem, candidate, options=None, /, **kw):
            order.append(("evaluate", Path(candidate).read_text()))
            return super().evaluate(problem, candidate, options, **kw)

        def prebuild(self, problem, candidate):
            built = super().prebuild(problem, candidate)
            order.append(("built", Path(candidate).read_text()))
            return built

    evaluator = Recording(target=target, delay_s=0.2)
    extension = (
        "from torch.utils.cpp_extension import load_inline\nEXT = load_inline('k', cpp_sources='', cuda_sources='')"
    )
    drafts = [kernel(t, extension if t != 8 else "") for t in (2, 4, 8, 16)]
    llm = ScriptedOperator(drafts)
    search(Store(tmp_path), RunSpec(PROBLEM, seed, llm=("s:x",)), Limits(budget=5), evaluator, llm, max_inflight=4)
    if target == "cpu":
        assert evaluator.prebuilt == []
        return
    built = {s for s in evaluator.evaluated if extension in s}  # (one evaluated twice: about to be the best)
    assert len(built) == 3 and sorted(evaluator.prebuilt) == sorted(built)  # once each; the plain one never
    for source in built:  # each evaluation came after its build
        assert order.index(("built", source)) < order.index(("evaluate", source))


def test_the_cost_budget_stops_the_search(tmp_path, seed):
    llm = ScriptedOperator([kernel(t) for t in (2, 4, 8, 16, 64, 128)], cost=1.0)
    _, driver, reason, _ = search(
        Store(tmp_path), RunSpec(PROBLEM, seed, llm=("s:x",)), Limits(budget=20, max_cost=2.5), llm=llm
    )
    assert reason.startswith("LLM cost budget of $2.5 reached") and driver.cost >= 2.5


class _Client(LLMClient):
    """A model that answers from a list; an LLMError in the list is raised (an unreachable model)."""

    provider = "scripted"

    def __init__(self, answers):
        super().__init__("m")
        self.answers = list(answers)

    def complete(self, messages, *, max_tokens=8192, temperature=0.7, name=""):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return LLMResponse(text=answer, model=self.name, prompt_tokens=10, completion_tokens=5)


def _universal(answers) -> UniversalOperator:
    client = _Client(answers)
    return UniversalOperator(Ensemble([(client, 1.0)], random.Random(0)), load_problem(PROBLEM), get_platform("cpu"))


def fenced(source: str) -> str:
    return f"The tile is now larger.\n```python\n{source}```\n"


def test_three_unreachable_calls_in_a_row_stop_the_run_and_are_recorded(tmp_path, seed):
    llm = _universal([LLMError("connection refused")] * 6)  # two steps are in flight at once
    opened, _, reason, _ = search(Store(tmp_path), RunSpec(PROBLEM, seed, llm=("s:x",)), Limits(budget=9), llm=llm)
    assert re.fullmatch(r"the LLM failed [34] times in a row: connection refused", reason), reason
    calls = opened.store.llm_calls(opened.run.id)
    assert len(calls) >= 3 and all(c["outcome"] == "error" and c["node_id"] is None for c in calls)
    seedless = session.open_run(Store(tmp_path / "b"), RunSpec(PROBLEM, llm=("s:x",)), Limits(budget=9))
    llm = _universal([LLMError("connection refused")] * 6)
    reason = session.build_driver(seedless, [RuleEvaluator()], llm=llm, warm_start=False).run_search()
    run = seedless.store.get_run(seedless.run.id)
    assert run.status == "failed" and run.stop_reason == reason  # no node at all: not a finished search


def test_an_unusable_answer_is_a_rejected_node_never_evaluated_and_replay_rebuilds_the_graph(tmp_path, seed):
    store = Store(tmp_path)
    # kernels without tunables: every step is the model's (no tune steps, which replay does not repeat)
    seed.write_text(kernel(1, tunable=False))
    answers = [fenced(kernel(t, tunable=False)) for t in (8, 16, 32, 64)]
    answers.insert(1, "no code at all")
    evaluator = RuleEvaluator()
    spec = RunSpec(PROBLEM, seed, llm=("s:x",))
    first, _, _, out = search(store, spec, Limits(budget=6), evaluator, _universal(answers), draft_steps=2)
    rows = store.nodes(first.run.id)
    rejected = [r for r in rows if r.status == "rejected"]
    assert len(rejected) == 1 and "unusable response" in rejected[0].reason
    assert len(evaluator.evaluated) == len(rows) - 1
    calls = store.llm_calls(first.run.id)
    assert sorted(c["outcome"] for c in calls) == ["ok", "ok", "ok", "ok", "unusable"]  # two drafts at once
    # replay: the same answers on the same parents, no model
    replay_spec = RunSpec(PROBLEM, seed, llm=(f"replay:{first.run.id}",), rng_seed=1)
    opened = session.open_run(store, replay_spec, Limits(budget=6))
    replay = session.llm_operator(opened, session.LLMSettings())
    driver = session.build_driver(opened, [RuleEvaluator()], llm=replay, warm_start=False, confirm_best=False)
    reason = driver.run_search()
    again = store.nodes(opened.run.id)
    assert reason in ("replay: every recorded response has been served", "budget of 6 nodes reached")

    def graph(nodes):  # (operator, kernel, parents' kernels): node order may differ, two steps were in flight
        hashes = {r.id: r.source_hash for r in nodes}
        return sorted((r.operator, r.source_hash, tuple(hashes[e.parent_id] for e in r.parents)) for r in nodes)

    assert graph(again) == graph(rows)
    assert {c["model"] for c in store.llm_calls(opened.run.id)} == {f"replay:{first.run.id}"}


def test_the_same_spec_resumes_its_run_and_larger_limits_extend_it(tmp_path, seed):
    store = Store(tmp_path)
    spec = RunSpec(PROBLEM, seed)
    first, _, _, _ = search(store, spec, Limits(budget=3))
    evaluator = RuleEvaluator()
    again, _, reason, out = search(store, spec, Limits(budget=6), evaluator)
    assert again.run.id == first.run.id and again.resumed and again.stored_nodes == 3
    assert out.evaluations == 6 and reason == "budget of 6 nodes reached"
    assert len(evaluator.evaluated) == 3  # the seed is not evaluated again
    assert json.loads(store.get_run(first.run.id).config)["budget"] == 6
    other = session.open_run(store, RunSpec(PROBLEM, seed, tag="bench"), Limits(budget=3))
    assert other.run.id != first.run.id and not other.resumed  # a runner's own runs are kept apart
    assert session.stored_spec(store, first.run.id) == RunSpec(PROBLEM.resolve(), seed.resolve())


def test_a_resume_keeps_the_limits_it_was_given_unless_they_are_given_again(tmp_path, seed):
    store = Store(tmp_path)
    spec = RunSpec(PROBLEM, seed)
    first = session.open_run(store, spec, Limits(budget=3, time_s=100.0, stall=50, max_cost=2.0))
    again = session.open_run(store, spec, Limits(), run_id=first.run.id)
    assert again.limits == Limits(budget=3, time_s=100.0, stall=50, max_cost=2.0)
    extended = session.open_run(store, spec, Limits(budget=6))  # the same spec found again, one limit raised
    assert extended.run.id == first.run.id and extended.limits == Limits(6, 100.0, 50, None, 2.0)
    assert session.open_run(Store(tmp_path / "new"), spec).limits == Limits(budget=20)  # a new run: the defaults


def test_an_evaluation_from_an_earlier_run_is_reused(tmp_path, seed):
    store = Store(tmp_path)
    search(store, RunSpec(PROBLEM, seed), Limits(budget=3))
    evaluator = RuleEvaluator()
    opened, _, _, _ = search(store, RunSpec(PROBLEM, seed, rng_seed=5), Limits(budget=1), evaluator)
    assert evaluator.evaluated == [] and store.nodes(opened.run.id)[0].reused_from is not None


def test_evolve_crosses_two_parents(tmp_path):
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1, width=2))
    store = Store(tmp_path)
    opened, _, _, _ = search(store, RunSpec(PROBLEM, seed, strategy="evolve"), Limits(budget=25))
    crossed = [r for r in store.nodes(opened.run.id) if r.operator == "crossover"]
    assert crossed and all(len(r.parents) == 2 for r in crossed)


def test_session_errors_say_what_is_wrong(tmp_path, seed):
    store = Store(tmp_path)
    with pytest.raises(SessionError, match="needs a starting kernel"):
        session.open_run(store, RunSpec(PROBLEM), Limits())
    with pytest.raises(SessionError, match="nope.py: no such seed kernel"):
        session.open_run(store, RunSpec(PROBLEM, tmp_path / "nope.py"), Limits())
    with pytest.raises(SessionError, match="unknown strategy"):
        session.open_run(store, RunSpec(PROBLEM, seed, strategy="annealing"), Limits())
    if not os.path.exists("/dev/nvidiactl") and not os.path.exists("/proc/driver/nvidia/version"):
        with pytest.raises(SessionError, match="target 'cuda' needs a GPU, and this machine has none"):
            session.open_run(store, RunSpec(PROBLEM, seed, target="cuda"), Limits())
        assert store.runs() == []  # refused before any run was created
    with pytest.raises(SessionError, match="no run 'zzz'"):
        session.stored_spec(store, "zzz")
    with pytest.raises(SessionError, match="expected PROVIDER:MODEL"):
        session.first_prompt(store, RunSpec(PROBLEM, seed, llm=("gpt4",)), session.LLMSettings())


def test_the_best_kernel_is_evaluated_against_torch_compile_only_where_the_search_ran_without_it(tmp_path, seed):
    """On targets that time torch.compile, a search against eager skips it, and the best kernel is evaluated once
    with it at the end (best_with_compile.json); --no-compile-baseline, or a target without it, skips that too."""

    class GpuLike(RuleEvaluator):
        def __init__(self):
            super().__init__()
            self.platform = get_platform("cuda")  # times torch.compile; the evaluations are the rule's

    store = Store(tmp_path)
    gpu = GpuLike()
    opened, _, _, out = search(store, RunSpec(PROBLEM, seed), Limits(budget=3), gpu)
    assert all(o.compile_baseline is False for o in gpu.options[:-1])  # the search's nodes: never compiled
    final_options = gpu.options[-1]
    assert final_options.compile_baseline is None and out.final is not None  # the platform's default: timed
    assert (tmp_path / opened.run.id / "best_with_compile.json").is_file()
    off = GpuLike()
    _, _, _, out = search(Store(tmp_path / "off"), RunSpec(PROBLEM, seed, compile_baseline=False), Limits(3), off)
    assert out.final is None and all(o.compile_baseline is False for o in off.options)
    _, _, _, out = search(Store(tmp_path / "cpu"), RunSpec(PROBLEM, seed), Limits(3), RuleEvaluator())
    assert out.final is None  # the cpu target never times torch.compile


def test_the_driver_needs_an_operator(tmp_path):
    store = Store(tmp_path)
    run = store.create_run(problem_path="p", problem_hash="h", platform="cpu", config={}, config_hash="c", budget=1)
    with pytest.raises(ValueError, match="needs an operator"):
        Driver(store, run, load_problem(PROBLEM), make_strategy("greedy", random.Random(0)), [], SearchConfig(), None)


KILLABLE = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from kernelevolve.search import session
from kernelevolve.store.store import Store
from tests.doubles import RuleEvaluator
spec = session.RunSpec(Path({problem!r}), Path({seed!r}))
limits = session.Limits(budget=7)
opened = session.open_run(Store({runs!r}), spec, limits)
driver = session.build_driver(opened, [RuleEvaluator(delay_s=float(sys.argv[1]))], warm_start=False)
print(driver.run_search())
"""


def test_sigkill_mid_run_then_resume_completes_without_duplicates(tmp_path, seed):
    """Every node is committed as it finishes: kill -9 loses only what was in flight, and the same spec resumes."""
    script = tmp_path / "search.py"
    runs = tmp_path / "runs"
    script.write_text(KILLABLE.format(root=str(ROOT), problem=str(PROBLEM), seed=str(seed), runs=str(runs)))
    proc = subprocess.Popen([sys.executable, str(script), "0.3"], start_new_session=True, cwd=ROOT)
    db = runs / "kernelevolve.db"
    deadline, nodes = time.monotonic() + 120, 0
    while time.monotonic() < deadline and nodes < 3:
        time.sleep(0.1)
        try:
            with sqlite3.connect(db) as con:
                nodes = con.execute("select count(*) from nodes").fetchone()[0]
        except sqlite3.Error:
            pass
    assert nodes >= 3, "the run did not get going"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as con:
        assert con.execute("select status from runs").fetchone()[0] == "running"  # nothing had the chance to mark it
    p = subprocess.run([sys.executable, str(script), "0"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0 and "budget of 7 nodes reached" in p.stdout, p.stderr
    with sqlite3.connect(db) as con:
        rows = con.execute("select source_hash, step from nodes").fetchall()
        evals = con.execute("select count(*) from evaluations").fetchone()[0]
        runs_ = con.execute("select count(*), max(status) from runs").fetchone()
    assert len(rows) == 7 == evals and len({h for h, _ in rows}) == 7
    assert sorted(s for _, s in rows) == list(range(1, 8)) and runs_ == (1, "done")


def test_a_starting_kernel_is_a_root_of_its_own_and_is_not_evaluated_again_on_resume(tmp_path, seed):
    tiled = tmp_path / "tiled.py"
    tiled.write_text(kernel(32))
    store = Store(tmp_path)
    messages = []
    spec = RunSpec(PROBLEM, seed, (tiled,))
    opened, _, _, out = search(store, spec, Limits(budget=2), on_update=lambda p: messages.append(p.message))
    assert "evaluating the starting kernel tiled.py" in messages
    rows = store.nodes(opened.run.id)
    assert [(r.operator, r.params) for r in rows] == [("seed", '{"TILE": 1}'), ("start", '{"TILE": 32}')]
    assert out.best_node == rows[1].step  # numbered within the run
    evaluator = RuleEvaluator()
    search(store, spec, Limits(budget=3), evaluator)
    assert [r.operator for r in store.nodes(opened.run.id)] == ["seed", "start", "tune"]
    assert len(evaluator.evaluated) == 1


def test_progress_says_when_a_node_is_listed_for_review(tmp_path, seed):
    class Reviewed(RuleEvaluator):
        def evaluate(self, problem, candidate, options=None, /, **kw):
            result = super().evaluate(problem, candidate, options, **kw)
            result.review = ["threads waited for a CPU 140% of the timed wall time"]
            return result

    messages = []
    search(
        Store(tmp_path), RunSpec(PROBLEM, seed), Limits(1), Reviewed(), on_update=lambda p: messages.append(p.message)
    )
    assert any(m.startswith("node 1 (seed): ok") and "(review: threads waited" in m for m in messages), messages


@pytest.mark.parametrize("strategy", ["greedy", "mcts", "evolve"])
def test_every_strategy_improves_on_the_seed(tmp_path, seed, strategy):
    _, _, _, out = search(Store(tmp_path), RunSpec(PROBLEM, seed, strategy=strategy), Limits(budget=6))
    assert out.evaluations == 6 and out.best_fitness > out.seed_fitness


def test_warm_start_takes_the_earlier_runs_best_kernel_for_a_similar_problem(tmp_path, seed):
    store = Store(tmp_path)
    first, _, _, out = search(store, RunSpec(PROBLEM, seed), Limits(budget=5))
    config = json.loads(store.get_run(first.run.id).config)
    assert config["lessons"] and config["lessons"][0]["gain"] > 1  # what worked was distilled
    similar = tmp_path / "transpose_small.py"
    similar.write_text(PROBLEM.read_text().replace('[{"N": 2048}, {"N": 1000}]', '[{"N": 1024}, {"N": 600}]'))
    opened = session.open_run(store, RunSpec(similar, seed), Limits(budget=3))
    driver = session.build_driver(opened, [RuleEvaluator()])
    assert any(f"warm start: run {first.run.id}'s best kernel (node {out.best_node}" in n for n in opened.notes)
    driver.run_search()
    rows = store.nodes(opened.run.id)
    assert [r.operator for r in rows][:2] == ["seed", "warm-start"]
    assert store.source(rows[1].id) == open(out.best_kernel).read()


def test_a_known_kernel_returned_while_its_twin_is_evaluated_is_never_evaluated_twice(tmp_path, seed):
    twin = kernel(8)
    llm = ScriptedOperator([twin] * 4 + [kernel(t) for t in (2, 4, 16, 32, 64)])
    evaluator = RuleEvaluator(delay_s=0.2)
    spec = RunSpec(PROBLEM, seed, llm=("s:x",))
    search(Store(tmp_path), spec, Limits(budget=5), evaluator, llm, draft_steps=3)
    assert evaluator.evaluated.count(twin) == 1


def test_two_identical_unusable_answers_in_flight_make_one_node(tmp_path, seed):
    """An answer judged without an evaluation (a policy violation, no module) and its twin arriving together: the
    second is a duplicate, not a second row with the same source (which the store refuses)."""
    import threading

    from kernelevolve.result import EvalResult, Status

    unusable = kernel(8, extra="# judged unusable\n")
    together = threading.Barrier(2, timeout=10)

    class Judging(ScriptedOperator):
        def propose(self, request):
            proposal = super().propose(request)
            if proposal.source == unusable:
                together.wait()  # both answers come back at the same moment
                proposal.result = EvalResult(status=Status.REJECTED, correct=False, reason="scripted: unusable")
            return proposal

    llm = Judging([unusable, unusable, kernel(4), kernel(16), kernel(32)])
    spec = RunSpec(PROBLEM, seed, llm=("s:x",))
    opened, _, _, _ = search(Store(tmp_path), spec, Limits(budget=4), RuleEvaluator(), llm, max_inflight=2)
    rows = opened.store.nodes(opened.run.id)
    assert [r.status for r in rows].count("rejected") == 1
    assert len({r.source_hash for r in rows}) == len(rows)


HANGING = """
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal gives it: the test may inherit SIG_IGN
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from kernelevolve.search import session
from kernelevolve.store.store import Store
from tests.doubles import RuleEvaluator, ScriptedOperator, kernel

def hang(request):
    time.sleep(3600)  # a model server that never answers

spec = session.RunSpec(Path({problem!r}), Path({seed!r}), llm=("s:x",))
opened = session.open_run(Store({runs!r}), spec, session.Limits(budget=9))
llm = ScriptedOperator([hang] * 9)
driver = session.build_driver(opened, [RuleEvaluator()], llm=llm, warm_start=False,
                              on_update=lambda p: print(p.message, flush=True))
driver.heartbeat_s = 0.5
driver.run_search()
"""


def test_a_hung_model_is_reported_and_ctrl_c_stops_the_run_within_seconds(tmp_path, seed):
    """The progress line says what the run waits for; Ctrl-C ends it at once, with what finished committed."""
    script = tmp_path / "search.py"
    runs = tmp_path / "runs"
    script.write_text(HANGING.format(root=str(ROOT), problem=str(PROBLEM), seed=str(seed), runs=str(runs)))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("waiting for the model"):
            break
    assert any(line.startswith("node 1 (seed): ok") for line in lines), lines
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert time.monotonic() - t0 < 10, "Ctrl-C waited for the hung call"
    with sqlite3.connect(runs / "kernelevolve.db") as con:
        assert con.execute("select status from runs").fetchone()[0] == "interrupted"
        assert con.execute("select count(*) from nodes").fetchone()[0] == 1  # the seed, committed


def test_a_root_that_timed_out_is_evaluated_again_when_its_run_resumes(tmp_path, seed):
    seed.write_text(kernel(1, "SLOW = 1"))
    store = Store(tmp_path)
    spec = RunSpec(PROBLEM, seed)
    slow = RuleEvaluator(statuses={"SLOW": Status.TIMEOUT})
    first, _, reason, _ = search(store, spec, Limits(budget=3), slow)
    assert "timed out" in reason and "raise --timeout" in reason
    fast = RuleEvaluator()  # as with a larger --timeout
    again, _, reason, out = search(store, spec, Limits(budget=3), fast)
    assert again.run.id == first.run.id and fast.evaluated[0] == seed.read_text()
    assert reason == "budget of 3 nodes reached" and out.seed_fitness > 0
    seed_node = store.nodes(first.run.id)[0]
    assert seed_node.status == "ok" and store.evaluation(seed_node.id).status is Status.OK


EVALUATING = """
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal gives it: the test may inherit SIG_IGN
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.search import session
from kernelevolve.store.store import Store

spec = session.RunSpec(Path({problem!r}), Path({seed!r}), trials=1)
opened = session.open_run(Store({runs!r}), spec, session.Limits(budget=3))
evaluator = Evaluator("cpu", timeout_s=300)
driver = session.build_driver(opened, [evaluator], warm_start=False, on_update=lambda p: print(p.message, flush=True))
try:
    driver.run_search()
finally:
    evaluator.close()
"""


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in open(f"/proc/{entry}/environ", "rb").read():
                found.append(int(entry))
        except OSError:
            pass
    return found


def test_ctrl_c_during_an_evaluation_stops_the_run_and_its_worker_within_seconds(tmp_path):
    """The harness's real worker, running a kernel that never returns: Ctrl-C does not wait for the evaluation
    deadline, and no worker is left running."""
    script, runs, marker = tmp_path / "search.py", tmp_path / "runs", str(tmp_path / "cache")
    problem, seed = FIXTURES / "kb_relu.py", FIXTURES / "candidates" / "hangs.py"
    script.write_text(EVALUATING.format(root=str(ROOT), problem=str(problem), seed=str(seed), runs=str(runs)))
    env = {**os.environ, "KERNELEVOLVE_CACHE": marker}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    for line in proc.stdout:
        if line.startswith("evaluating the seed kernel"):
            break
    time.sleep(3)  # the worker is in the candidate's loop by now
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert time.monotonic() - t0 < 15, "Ctrl-C waited for the evaluation"
    deadline = time.monotonic() + 10
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes_with(marker), "a worker outlived the interrupted run"
    with sqlite3.connect(runs / "kernelevolve.db") as con:
        assert con.execute("select status from runs").fetchone()[0] == "interrupted"


def test_a_new_best_is_evaluated_again_and_keeps_the_lower_measure(tmp_path, seed):
    """A noisy measurement never crowns a node alone: a candidate about to become the best is evaluated again,
    and the lower of its two fitnesses (with both in its review) is what the search ranks."""
    lucky = iter([5.0, 1.2])  # the tile-32 kernel measures 5x once, then 1.2x

    def noisy(source: str) -> float:
        return next(lucky) if "TILE = 32\n" in source else tile_rule(source)

    evaluator = RuleEvaluator(noisy)
    llm = ScriptedOperator([kernel(32)])
    spec = RunSpec(PROBLEM, seed, llm=("s:x",))
    _, driver, _, _ = search(Store(tmp_path), spec, Limits(budget=2), evaluator, llm, confirm_best=True, draft_steps=1)
    assert evaluator.evaluated.count(kernel(32)) == 2
    node = next(n for n in driver.graph.nodes.values() if n.operator == "llm-draft")
    assert node.fitness == 1.2
    (row,) = [r for r in Store(tmp_path).nodes(driver.run.id) if r.id == node.id]
    review = Store(tmp_path).evaluation(row.id).review
    assert any("evaluated again before it became the best: 5x, then 1.2x" in note for note in review), review


def test_a_run_is_searched_by_one_process_at_a_time(tmp_path, seed):
    """Two processes stepping one run would both write its store; the second is told who holds it, and can go on
    once the holder has gone (a killed holder leaves no lock behind)."""
    store = Store(tmp_path)
    opened = session.open_run(store, RunSpec(PROBLEM, seed), Limits(budget=2))
    session.finish(opened, "opened only")  # releases the run
    hold = (
        "import sys, time\nfrom pathlib import Path\nfrom kernelevolve.search import run_lock\n"
        f"run_lock.hold(Path({str(tmp_path / opened.run.id)!r}), 'r')\nprint('held', flush=True)\ntime.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SessionError, match=rf"run {opened.run.id} is being searched by another process \(pid "):
            session.open_run(store, RunSpec(PROBLEM, seed), Limits(budget=2))
    finally:
        holder.kill()
        holder.wait()
    again = session.open_run(store, RunSpec(PROBLEM, seed), Limits(budget=2))
    assert again.run.id == opened.run.id and again.resumed
    session.finish(again, "opened only")


def test_a_stored_verdict_is_reused_only_from_this_harness_torch_and_device(tmp_path, seed):
    """A verdict from an older harness (a check since fixed), another torch or another GPU says nothing certain
    about this one: the source is evaluated again. One judged here and now is reused, never evaluated twice."""
    from kernelevolve.eval import environment

    env = environment.current("cpu")
    assert environment.matches({**env}, env["device"], env)
    assert environment.matches({**env, "torch": env["torch"] + "+cu130"}, env["device"], env)  # one release
    assert not environment.matches({**env, "harness": "an older one"}, env["device"], env)
    assert not environment.matches({**env, "torch": "1.13.1"}, env["device"], env)
    assert not environment.matches({}, env["device"], env)  # stored before harnesses were recorded
    gpu = environment.current("cuda", "NVIDIA H200")
    assert not environment.matches({**gpu}, "NVIDIA H100 80GB HBM3", gpu)

    store, twin = Store(tmp_path), kernel(8, tunable=False)
    first = RuleEvaluator()
    search(store, RunSpec(PROBLEM, seed, tag="a"), Limits(budget=2), first, ScriptedOperator([twin]))
    assert first.evaluated.count(twin) == 1
    again = RuleEvaluator()
    search(store, RunSpec(PROBLEM, seed, tag="b"), Limits(budget=2), again, ScriptedOperator([twin]))
    assert again.evaluated.count(twin) == 0  # judged here and now: reused
    with sqlite3.connect(tmp_path / "kernelevolve.db") as db:  # as if an older harness had judged every node
        for node_id, text in db.execute("SELECT node_id, result FROM evaluations").fetchall():
            data = json.loads(text)
            data["versions"]["harness"] = "an older one"
            db.execute("UPDATE evaluations SET result = ? WHERE node_id = ?", (json.dumps(data), node_id))
    later = RuleEvaluator()
    search(store, RunSpec(PROBLEM, seed, tag="c"), Limits(budget=2), later, ScriptedOperator([twin]))
    assert later.evaluated.count(twin) == 1


def test_a_harness_limit_is_evaluated_again_later_in_the_run(tmp_path, seed, monkeypatch):
    """No verdict on the kernel (the machine was short): the node is evaluated again, at most MACHINE_RETRIES
    times, and keeps the later verdict; one short every time stays harness_limit."""
    monkeypatch.setattr(Driver, "retry_wait_s", 0.01)
    seed.write_text(kernel(1) + "# SHORT_ONCE\n")
    evaluator = RuleEvaluator(short={"SHORT_ONCE": 1})
    opened, _, _, out = search(Store(tmp_path), RunSpec(PROBLEM, seed), Limits(budget=2), evaluator)
    first = opened.store.nodes(opened.run.id)[0]
    assert first.status == "ok" and out.seed_fitness == pytest.approx(tile_rule(kernel(1)))
    assert evaluator.evaluated.count(seed.read_text()) == 2  # one node, evaluated twice
    result = opened.store.evaluation(first.id)
    assert any("evaluated again (1 of 2) after a harness_limit" in line for line in result.review)

    seed.write_text(kernel(1) + "# SHORT_ALWAYS\n")
    evaluator = RuleEvaluator(short={"SHORT_ALWAYS": 99})
    opened, _, reason, _ = search(Store(tmp_path / "b"), RunSpec(PROBLEM, seed), Limits(budget=2), evaluator)
    assert [r.status for r in opened.store.nodes(opened.run.id)] == ["harness_limit"]
    assert len(evaluator.evaluated) == 3 and "not correct (harness_limit)" in reason


def test_an_inconclusive_node_is_evaluated_again_later_and_never_reused(tmp_path, seed, monkeypatch):
    """A timing check failed on a contended host: no verdict on the kernel, so the search evaluates it again later
    in the run (as a harness_limit, at most MACHINE_RETRIES times) instead of discarding it; the progress line
    says so; one inconclusive every time stays inconclusive, fitness 0, and a later run evaluates it afresh."""
    monkeypatch.setattr(Driver, "retry_wait_s", 0.01)
    seed.write_text(kernel(1) + "# BUSY_ONCE\n")
    evaluator = RuleEvaluator(busy={"BUSY_ONCE": 1})
    lines: list[str] = []
    opened, _, _, out = search(
        Store(tmp_path),
        RunSpec(PROBLEM, seed),
        Limits(budget=2),
        evaluator,
        on_update=lambda p: lines.append(p.message),
    )
    first = opened.store.nodes(opened.run.id)[0]
    assert first.status == "ok" and out.seed_fitness == pytest.approx(tile_rule(kernel(1)))
    assert evaluator.evaluated.count(seed.read_text()) == 2
    review = opened.store.evaluation(first.id).review
    assert any("evaluated again (1 of 2) after an inconclusive result: scripted inconclusive" in r for r in review)
    assert any("inconclusive; evaluated again in" in line for line in lines), lines

    seed.write_text(kernel(1) + "# BUSY_ALWAYS\n")
    evaluator = RuleEvaluator(busy={"BUSY_ALWAYS": 99})
    opened, _, _, _ = search(Store(tmp_path / "b"), RunSpec(PROBLEM, seed), Limits(budget=2), evaluator)
    nodes = opened.store.nodes(opened.run.id)
    assert [n.status for n in nodes] == ["inconclusive"] and not nodes[0].fitness
    assert len(evaluator.evaluated) == 1 + MACHINE_RETRIES
    assert opened.store.find_evaluated(opened.run.problem_hash, "cpu", nodes[0].source_hash, lambda r: True) is None


def test_a_seed_without_tunables_says_what_to_do_instead_of_exhausted(tmp_path, seed):
    """Issue 46 item 5: a C++ seed without TUNABLES gave a search that stopped at once, 'search space exhausted'."""
    seed.write_text(kernel(32, tunable=False))
    _, _, reason, out = search(Store(tmp_path), RunSpec(PROBLEM, seed), Limits(budget=5))
    assert out.evaluations == 1
    assert reason.startswith("nothing to tune: no correct kernel of the run has TUNABLES"), reason
    assert "add them to the seed, or give a model (--llm)" in reason


def test_a_start_kernel_without_tunables_leaves_the_search_to_the_parents_that_have_some(tmp_path, seed):
    """The start kernel is the best (greedy picks it) and has nothing to tune: the tune steps go to the seed."""
    seed.write_text(kernel(1))
    start = tmp_path / "start.py"
    start.write_text(kernel(32, tunable=False))
    _, driver, reason, out = search(Store(tmp_path), RunSpec(PROBLEM, seed, (start,)), Limits(budget=6))
    assert reason == "budget of 6 nodes reached" and out.evaluations == 6
    tuned = [n for n in driver.graph.nodes.values() if n.operator == "tune"]
    assert len(tuned) == 4 and all(n.parents[0] != 2 for n in tuned if n.parents)


def test_a_parent_whose_settings_are_all_tried_gives_the_tune_steps_to_another(tmp_path, seed):
    """A one-value TUNABLES start (nothing new to try) is the best: the seed, with a real space, is tuned instead."""
    seed.write_text(kernel(1))
    start = tmp_path / "start.py"
    start.write_text(kernel(32).replace("[1, 2, 4, 8, 16, 32, 64, 128]", "[32]"))
    _, _, reason, out = search(Store(tmp_path), RunSpec(PROBLEM, seed, (start,)), Limits(budget=6))
    assert reason == "budget of 6 nodes reached" and out.evaluations == 6
