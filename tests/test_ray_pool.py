"""Evaluation on a Ray cluster (eval/service/ray_pool.py), on a local cluster on 127.0.0.1 that declares two
logical GPUs: actors placed by GPU resources, one candidate at a time per GPU, an actor killed mid-evaluation
survived, and a search and a bench whose CPU evaluations reach the same verdicts as the local pool's. One cluster
for the module: Ray takes seconds to start."""

from __future__ import annotations

import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

ray = pytest.importorskip("ray")

from typer.testing import CliRunner  # noqa: E402

import tests.ray_doubles  # noqa: E402
from kernelevolve.cli import app  # noqa: E402
from kernelevolve.eval.evaluator import Evaluator  # noqa: E402
from kernelevolve.eval.service.pool import SharedPool  # noqa: E402
from kernelevolve.eval.service.ray_pool import NAMESPACE, RayPool  # noqa: E402
from kernelevolve.problem.problem import ProblemError, load_problem  # noqa: E402
from kernelevolve.result import Status  # noqa: E402
from kernelevolve.search import session  # noqa: E402
from kernelevolve.search.session import Limits, RunSpec  # noqa: E402
from kernelevolve.store.store import Store  # noqa: E402
from tests.conftest import CANDIDATES, FIXTURES  # noqa: E402
from tests.doubles import kernel  # noqa: E402
from tests.ray_doubles import SlowRule  # noqa: E402

PROBLEM = FIXTURES / "transpose.py"


@pytest.fixture(scope="module")
def cluster():
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(tests.ray_doubles)  # the actors have no tests package to import
    ray.init(address="local", num_cpus=2, num_gpus=2, include_dashboard=False, namespace=NAMESPACE,
             log_to_driver=False)  # fmt: skip
    yield
    ray.shutdown()


def _paths(tmp_path, *sources):
    out = []
    for i, source in enumerate(sources):
        out.append(tmp_path / f"k{i}.py")
        out[-1].write_text(source)
    return out


def test_one_actor_per_gpu_each_timing_one_candidate_at_a_time(cluster, tmp_path):
    pool = RayPool("cpu", actors=2, num_gpus=1, name="placed", factory=SlowRule, delay_s=0.2)
    try:
        assert ray.available_resources().get("GPU", 0) == 0  # each actor holds one of the two GPUs
        problem = load_problem(PROBLEM)
        lanes = [lane for _ in range(3) for lane in pool.lanes()]  # three searches asking at once
        paths = _paths(tmp_path, *(kernel(2**i) for i in range(len(lanes))))
        with ThreadPoolExecutor(len(lanes)) as threads:
            results = list(threads.map(lambda a: a[0].evaluate(problem, a[1]), zip(lanes, paths)))
    finally:
        pool.close()
    assert all(r.status == Status.OK for r in results)
    by_gpu: dict[float, list[tuple[float, float]]] = {}
    for r in results:
        by_gpu.setdefault(r.stages["gpu"], []).append((r.stages["started"], r.stages["ended"]))
        assert any(c.startswith("exclusive device: ") and "GPU" in c for c in r.checks), r.checks
    assert sorted(by_gpu) == [0.0, 1.0] and sorted(len(s) for s in by_gpu.values()) == [3, 3]
    for spans in by_gpu.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # never two at once on one GPU
    assert all(r.stages["ray_dispatch"] < 0.5 for r in results)


def test_an_actor_killed_mid_evaluation_fails_only_that_evaluation_which_is_queued_again(cluster, tmp_path):
    pool = RayPool("cpu", actors=2, num_gpus=1, name="killed", factory=SlowRule, delay_s=0.1)
    try:
        problem = load_problem(PROBLEM)
        slow, quick = _paths(tmp_path, kernel(32, extra="# SLOW"), kernel(8))
        first = pool.devices[0]
        got = {}
        running = threading.Thread(target=lambda: got.update(r=pool.lanes()[0].evaluate(problem, slow)))
        running.start()
        time.sleep(0.5)  # it is on the first actor (the pool's first free device), 2 s from its end
        ray.kill(ray.get_actor(first.name, namespace=NAMESPACE))
        running.join(30)
        result = got["r"]
        assert result.status == Status.OK and result.correct
        assert len(result.review) == 1 and result.review[0].startswith(f"evaluated again: {first.where} was lost")
        assert pool.lost == 1
        assert pool.lanes()[0].evaluate(problem, quick).status == Status.OK  # the search goes on
        deadline = time.monotonic() + 20
        while pool.size < 2 and time.monotonic() < deadline:  # the replacement joins once it answers
            time.sleep(0.1)
        assert pool.size == 2 and first not in pool.devices
    finally:
        pool.close()


def _small_transpose(tmp_path):
    """The transpose at 256 and 100 (its 2048 and 1000 only made the searches' timing longer: verdicts are compared)."""
    path = tmp_path / "transpose_small.py"
    path.write_text(f'{PROBLEM.read_text()}\nSHAPE_CASES = [{{"N": 256}}, {{"N": 100}}]\n')
    return path


def _search(pool: SharedPool, runs, seed, problem):
    opened = session.open_run(Store(runs), RunSpec(problem, seed, trials=1), Limits(budget=2))
    driver = session.build_driver(opened, pool.lanes(), warm_start=False, confirm_best=False)
    driver.run_search()
    return {n.source_hash: (n.status, n.correct) for n in opened.store.nodes(opened.run.id)}


@pytest.fixture
def suite(tmp_path):
    for name, problem, seed in (
        ("relu", "kb_relu.py", "relu_ok.py"),
        ("wrong", "kb_relu.py", "relu_wrong.py"),
        ("broken", "bad_get_inputs.py", "relu_ok.py"),
    ):
        (tmp_path / "suite" / name).mkdir(parents=True)
        shutil.copy(FIXTURES / problem, tmp_path / "suite" / name / "problem.py")
        shutil.copy(CANDIDATES / seed, tmp_path / "suite" / name / "seed.py")
    return tmp_path / "suite"


def _bench(tmp_path, suite, workers):
    args = ["bench", str(suite), "--no-search", "--target", "cpu", "--trials", "1", "--workers", workers,
            "--out", str(tmp_path / workers), "--runs-dir", str(tmp_path / f"runs-{workers}")]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    import json

    rows = json.loads((tmp_path / workers / "results.json").read_text())["rows"]
    return {r["name"]: (r["status"], r["correct"]) for r in rows}


def _verdicts(pool: SharedPool, suite) -> dict[str, tuple[str, bool]]:
    """What the local pool says of each seed of the suite, as bench's rows say it."""
    out = {}
    for folder in sorted(suite.iterdir()):
        try:
            result = pool.lanes()[0].evaluate(load_problem(folder / "problem.py"), folder / "seed.py", trials=1)
            out[folder.name] = (result.status.value, result.correct)
        except ProblemError:
            out[folder.name] = ("problem_error", False)
    return out


def test_cpu_evaluations_on_ray_reach_the_local_pools_verdicts(cluster, tmp_path, suite):
    """Real CPU evaluations in an actor (its own workers, sandbox and judge): a search's nodes, and a bench of three
    problems evaluated concurrently, get the statuses the local pool gives the same candidates. The bench joins
    the search's actor by its name (as a second optimize process would), so Ray starts one actor, not two."""
    seed, problem = _paths(tmp_path, kernel(1))[0], _small_transpose(tmp_path)
    local = SharedPool([Evaluator("cpu", timeout_s=120, prestart=True)])
    try:
        here = _search(local, tmp_path / "runs-local", seed, problem)
        verdicts = _verdicts(local, suite)
    finally:
        local.close()
    remote = RayPool("cpu", actors=1, name="kernelevolve-cpu", timeout_s=120)
    try:
        there = _search(remote, tmp_path / "runs-ray", seed, problem)
        rows = _bench(tmp_path, suite, "auto")
    finally:
        remote.close()
    same = here.keys() & there.keys()
    assert len(same) >= 1 and {h: here[h] for h in same} == {h: there[h] for h in same}
    assert all(status == "ok" for status, _ in there.values())
    assert rows == verdicts
    assert rows["relu"] == ("ok", True) and rows["wrong"][1] is False and rows["broken"][0] == "problem_error"
