"""The figures of docs/benchmarks/scale.md: evaluations per minute against the number of workers, Ray's dispatch
overhead per evaluation, the device's busy share with one and with four concurrent searches whose model answers
after a delay, and a model of N devices.

On a CPU machine (CI's kind) it starts a local Ray cluster declaring logical GPUs; the busy-share searches evaluate
with a double that sleeps like an evaluation (`--eval-s`) and a model double that sleeps like an API
(`--model-s`). Usage: python benchmarks/scale.py --out docs/benchmarks/data/scale.json [--repeats 3]
The one-GPU part (no Ray: the local pool) is benchmarks/scale_device.py, which uses the helpers here; so Ray is
imported by `main` only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tests.ray_doubles  # noqa: E402
from kernelevolve.eval.evaluator import Evaluator  # noqa: E402
from kernelevolve.eval.service.pool import SharedPool  # noqa: E402
from kernelevolve.eval.wire import EvalOptions  # noqa: E402
from kernelevolve.operators.base import Proposal  # noqa: E402
from kernelevolve.problem.problem import Problem, load_problem, source_hash  # noqa: E402
from kernelevolve.result import EvalResult  # noqa: E402
from kernelevolve.search import session  # noqa: E402
from kernelevolve.search.session import Limits, RunSpec  # noqa: E402
from kernelevolve.store.store import Store  # noqa: E402
from tests.doubles import kernel  # noqa: E402
from tests.ray_doubles import SlowRule  # noqa: E402

RELU = ROOT / "tests" / "fixtures" / "kb_relu.py"
RELU_OK = ROOT / "tests" / "fixtures" / "candidates" / "relu_ok.py"
TRANSPOSE = ROOT / "tests" / "fixtures" / "transpose.py"


def at_once(
    pool: SharedPool, problem: Problem, candidate: Path, evaluations: int, strict: bool = True
) -> tuple[float, list[EvalResult]]:
    """The same candidate asked `evaluations` times at once on the pool's devices: the wall, and the results.
    Without the torch.compile baseline, as a search's nodes (session.compile_in_search). strict: a crash or a
    timeout is an AssertionError (else the caller reads the statuses)."""
    lanes = pool.lanes(evaluations)
    options = EvalOptions(trials=1, compile_baseline=False)
    t0 = time.monotonic()
    with ThreadPoolExecutor(evaluations) as threads:
        results = list(threads.map(lambda lane: lane.evaluate(problem, candidate, options), lanes))
    failed = [r.reason for r in results if r.status.value in ("crashed", "timeout", "harness_limit")]
    assert not (strict and failed), failed  # a verdict either way is an evaluation; a crash or timeout is not
    return time.monotonic() - t0, results


def per_minute(pool: SharedPool, evaluations: int) -> float:
    """Real CPU evaluations of one small kernel, all asked at once, on the pool's devices."""
    wall, _ = at_once(pool, load_problem(RELU), RELU_OK, evaluations)
    return 60.0 * evaluations / wall


def dispatch(pool: SharedPool, evaluations: int) -> list[float]:
    """Ray's part of each call on an actor that evaluates in no time: seconds per evaluation."""
    problem = load_problem(TRANSPOSE)
    path = Path(tempfile.mkdtemp()) / "k.py"
    path.write_text(kernel(32))
    lane = pool.lanes(1)[0]
    return [lane.evaluate(problem, path).stages["ray_dispatch"] for _ in range(evaluations)]


def variant_double(rng: random.Random) -> str:
    """A new kernel double each time (a comment alone hashes as the same kernel)."""
    return kernel(32, extra=f"VARIANT = {rng.random()!r}")


class SlowModel:
    """An LLM operator double that answers after `delay_s` with `variant(rng)`, a new kernel each time (an API's
    latency)."""

    name = "llm"

    def __init__(self, delay_s: float, seed: int, variant: Callable[[random.Random], str] = variant_double):
        self.delay_s, self.cost, self.rng, self.variant = delay_s, 0.0, random.Random(seed), variant

    def propose(self, request):
        time.sleep(self.delay_s)
        source = self.variant(self.rng)
        return Proposal("llm" if request.parents else "llm-draft", request.parents[:1], source, source_hash(source))

    def feedback(self, proposal, result):
        pass

    def stop_reason(self):
        return ""


def searches_at_once(
    pool: SharedPool, searches: int, budget: int, problem: Path, seed: Path, model: Callable[[int], SlowModel], **spec
) -> tuple[float, Store, list[int]]:
    """`searches` searches at once on one pool, each with its model double `model(i)`: the wall, the store and
    the runs. spec: RunSpec's other fields (target, ...)."""
    store = Store(Path(tempfile.mkdtemp()))
    runs: list[int] = []

    def one(i: int) -> None:
        run_spec = RunSpec(problem, seed, trials=1, rng_seed=i, llm=("double:x",), tag=f"s{i}", **spec)
        opened = session.open_run(store, run_spec, Limits(budget=budget))
        driver = session.build_driver(opened, pool.lanes(), llm=model(i), draft_steps=budget, warm_start=False)
        driver.run_search()
        runs.append(opened.run.id)

    t0 = time.monotonic()
    with ThreadPoolExecutor(searches) as threads:
        list(threads.map(one, range(searches)))
    return time.monotonic() - t0, store, runs


def busy_share(pool: SharedPool, searches: int, budget: int, model_s: float) -> tuple[float, float]:
    """Searches at once, each with its model double, on one device: the share of the wall the device evaluated."""
    seed = Path(tempfile.mkdtemp()) / "seed.py"
    seed.write_text(kernel(32, tunable=False))
    wall, store, runs = searches_at_once(pool, searches, budget, TRANSPOSE, seed, lambda i: SlowModel(model_s, i))
    stages = [store.evaluation(n.id).stages for run in runs for n in store.nodes(run)]
    busy = sum(s["ended"] - s["started"] for s in stages if "ended" in s)  # the device's own account
    return min(1.0, busy / wall), wall


def model(devices: int, searches: int, model_s: float, eval_s: float) -> tuple[float, float]:
    """Evaluations per minute and the devices' busy share: each search keeps devices + 1 steps in flight (the
    driver's default), each step a model call then an evaluation, so the searches ask for at most
    searches * (devices + 1) / (model_s + eval_s) evaluations a second, and the devices serve at most
    devices / eval_s (Little's law on a closed system; queueing ignored, so an upper bound)."""
    asked = searches * (devices + 1) / (model_s + eval_s)
    served = min(asked, devices / eval_s)
    return 60.0 * served, served * eval_s / devices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--evaluations", type=int, default=8)
    parser.add_argument("--model-s", type=float, default=1.0)
    parser.add_argument("--eval-s", type=float, default=0.25)
    args = parser.parse_args()
    import ray
    import ray.cloudpickle

    from kernelevolve.eval.service.ray_pool import NAMESPACE, RayPool

    ray.cloudpickle.register_pickle_by_value(tests.ray_doubles)
    ray.init(address="local", num_cpus=4, num_gpus=2, include_dashboard=False, namespace=NAMESPACE,
             log_to_driver=False)  # fmt: skip
    out: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.node()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start",
        "versions": {"python": platform.python_version(), "ray": ray.__version__},
        "command": " ".join(sys.argv),
    }
    import torch

    out["versions"]["torch"] = torch.__version__
    rates: dict[str, list[float]] = {"local 1": [], "ray 1": [], "ray 2": []}
    for _ in range(args.repeats):
        local = SharedPool([Evaluator("cpu", timeout_s=300, prestart=True)])
        rates["local 1"].append(per_minute(local, args.evaluations))
        local.close()
        for n in (1, 2):
            pool = RayPool("cpu", actors=n, num_cpus=1, name=f"rate{n}", timeout_s=300)
            per_minute(pool, n)  # the actors' first evaluation: their workers warm
            rates[f"ray {n}"].append(per_minute(pool, args.evaluations))
            pool.close()
    out["evaluations_per_minute"] = rates
    quick = RayPool("cpu", actors=1, num_gpus=1, name="dispatch", factory=SlowRule, delay_s=0.0)
    out["ray_dispatch_s"] = dispatch(quick, 50)
    quick.close()
    shares: dict[str, list] = {}
    for kind in ("local", "ray"):
        for searches in (1, 4):
            for _ in range(args.repeats):
                if kind == "ray":
                    pool = RayPool("cpu", actors=1, num_gpus=1, name="busy", factory=SlowRule, delay_s=args.eval_s)
                else:
                    pool = SharedPool([SlowRule("cpu", delay_s=args.eval_s)])
                share, wall = busy_share(pool, searches, 12, args.model_s)
                shares.setdefault(f"{kind} {searches}", []).append([round(share, 3), round(wall, 2)])
                pool.close()
    out["busy_share"] = shares
    out["summary"] = {
        "evaluations_per_minute_median": {k: round(statistics.median(v), 1) for k, v in rates.items()},
        "ray_dispatch_ms_median": round(1000 * statistics.median(out["ray_dispatch_s"]), 2),
        "ray_dispatch_ms_p90": round(1000 * sorted(out["ray_dispatch_s"])[int(0.9 * 50)], 2),
        "busy_share_median": {k: statistics.median(s for s, _ in v) for k, v in shares.items()},
    }
    # Per-evaluation times measured on one GPU (docs/benchmarks/search.md: a Triton GEMM with the driver, 5.4-6.2 s)
    # and here (the double's), against a model that answers in --model-s and one that takes 20 s.
    out["model"] = [
        {"eval_s": e, "model_s": m, "searches": s, "devices": n, "per_minute": round(r, 1), "busy": round(b, 3)}
        for e in (5.7, args.eval_s)
        for m in (args.model_s, 20.0)
        for s in (1, 4, 16)
        for n in (1, 2, 4, 8)
        for r, b in [model(n, s, m, e)]
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out["summary"], indent=1))
    ray.shutdown()


if __name__ == "__main__":
    main()
