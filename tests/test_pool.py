"""The shared evaluation pool (eval/service/pool.py) on evaluator doubles: evaluations scheduled per evaluation
across searches, each device evaluating one candidate at a time, a lost device's evaluation queued again once, and
a search's time budget that does not count its wait for a device."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from kernelevolve.eval.service import workers
from kernelevolve.eval.service.pool import DeviceLost, QueueClock, SharedPool
from kernelevolve.eval.service.workers import make_pool, ray_address
from kernelevolve.eval.wire import EvalOptions
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from kernelevolve.search import session
from kernelevolve.search.session import Limits, RunSpec
from kernelevolve.store.store import Store
from tests.conftest import FIXTURES
from tests.doubles import RuleEvaluator, kernel

PROBLEM = FIXTURES / "transpose.py"


class Timed(RuleEvaluator):
    """A device double that records when it evaluated, and fails when two evaluations overlap on it."""

    def __init__(self, name: str, delay_s: float = 0.05, lose: int = 0):
        super().__init__(delay_s=delay_s)
        self.name = name
        self.lose = lose  # the next `lose` evaluations find the device gone mid-way
        self.spans: list[tuple[float, float]] = []
        self._busy = threading.Lock()

    def evaluate(self, problem, candidate, options=None, /, **kw):
        assert self._busy.acquire(blocking=False), f"{self.name}: two evaluations at once"
        try:
            t0 = time.monotonic()
            if self.lose:
                self.lose -= 1
                time.sleep(self.delay_s)
                raise DeviceLost("the actor died")
            result = super().evaluate(problem, candidate, options, **kw)
            self.spans.append((t0, time.monotonic()))
            return result
        finally:
            self._busy.release()


@pytest.fixture
def candidate(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(kernel(32))
    return path


def test_searches_share_devices_per_evaluation_one_candidate_at_a_time(candidate):
    devices = [Timed("a"), Timed("b")]
    pool = SharedPool(devices, describe=lambda d: d.name)
    searches = [pool.lanes() for _ in range(4)]  # four searches, two lanes each: eight evaluations asked at once
    problem = load_problem(PROBLEM)
    with ThreadPoolExecutor(8) as threads:
        results = list(threads.map(lambda lane: lane.evaluate(problem, candidate), [x for s in searches for x in s]))
    assert all(r.status == Status.OK for r in results)
    assert sorted(len(d.spans) for d in devices) == [4, 4]  # per evaluation, not per search
    for d in devices:
        spans = sorted(d.spans)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), d.name
    assert {r.checks[-1].split(":")[1].split()[0] for r in results} == {"a", "b"}
    waits = sorted(r.stages["queue_wait"] for r in results)
    assert waits[0] < 0.03 and waits[-1] >= 0.1  # two went at once, the last waited for three before it


def test_a_lost_device_fails_only_its_evaluation_which_is_queued_again_once(candidate):
    problem = load_problem(PROBLEM)
    flaky, steady = Timed("flaky", lose=1), Timed("steady")
    pool = SharedPool([flaky, steady], describe=lambda d: d.name)
    results = [pool.evaluate(problem, candidate, EvalOptions()) for _ in range(3)]
    assert [r.status for r in results] == [Status.OK] * 3
    assert results[0].review == ["evaluated again: flaky was lost during the evaluation (the actor died)"]
    assert pool.lost == 1 and pool.devices == [steady]  # no replacement given: the pool goes on a device short

    twice = SharedPool([Timed("x", lose=1), Timed("y", lose=1)], describe=lambda d: d.name)
    failed = twice.evaluate(problem, candidate, EvalOptions())
    assert failed.status == Status.HARNESS_LIMIT and not failed.correct
    assert "x was lost" in failed.reason and "y was lost" in failed.reason and "queued again 1 time" in failed.reason


def test_a_lost_device_is_replaced_once_its_replacement_answers(candidate):
    problem = load_problem(PROBLEM)
    fresh = Timed("fresh")
    pool = SharedPool([Timed("old", lose=1)], describe=lambda d: d.name, replace_device=lambda lost: fresh)
    result = pool.evaluate(problem, candidate, EvalOptions())
    assert result.status == Status.OK and "evaluated again: old was lost" in result.review[0]
    assert pool.devices == [fresh] and fresh.spans


def test_the_queue_clock_counts_overlapping_waits_once():
    clock = QueueClock()
    with clock.waiting():
        with clock.waiting():
            time.sleep(0.05)
        time.sleep(0.05)
    time.sleep(0.05)
    assert 0.1 <= clock.waited_s() < 0.14


def test_a_search_time_budget_does_not_count_its_wait_for_a_device(tmp_path):
    """Another search holds the only device for a second: the search's clock runs only while it is served."""
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1))
    pool = SharedPool([RuleEvaluator(delay_s=0.02)])
    hog = pool.lanes()[0]
    holding = threading.Thread(target=lambda: hog.evaluate(load_problem(PROBLEM), seed, EvalOptions()))
    pool.devices[0].delay_s = 1.5
    holding.start()
    time.sleep(0.05)
    pool.devices[0].delay_s = 0.02
    opened = session.open_run(Store(tmp_path / "runs"), RunSpec(PROBLEM, seed, trials=1), Limits(budget=3, time_s=0.5))
    driver = session.build_driver(opened, pool.lanes(), warm_start=False, confirm_best=False)
    t0 = time.monotonic()
    reason = driver.run_search()
    holding.join()
    waited = driver.evaluators[0].queued_s()
    assert waited > 0.6 and time.monotonic() - t0 >= waited  # it waited for the device longer than its budget
    assert reason == "budget of 3 nodes reached"  # and the wait was not spent from its 0.5 s


def test_workers_values_and_the_local_pool(monkeypatch):
    assert ray_address("local") is None and ray_address("ray") == "" and ray_address("auto") == "auto"
    assert ray_address("ray://head:10001") == "ray://head:10001"
    with pytest.raises(ValueError, match="give local, ray, auto or ray://HOST:PORT"):
        ray_address("slurm")
    made = []
    monkeypatch.setattr(workers, "evaluators", lambda target, devices, **kw: made.extend([target, devices]) or [
        RuleEvaluator(target=target) for _ in devices.split(",")])  # fmt: skip
    pool = make_pool("cuda", "local", "0,1", timeout_s=30)
    assert made == ["cuda", "0,1"] and pool.size == 2 and len(pool.lanes()) == 2 and len(pool.lanes(5)) == 5
