"""The one-GPU part of docs/benchmarks/scale.md (issue 49), in one device call of under 300 s and without Ray: the
local pool (`--workers local`: one evaluator on the GPU, scheduled per evaluation; C++/CUDA extensions built beside
it by CPU workers, eval/service/pool.py's prebuild) measured with real evaluations (the whole harness and judge):

1. rate: evaluations per minute, one candidate asked several times at once, repeated; each evaluation's device time;
2. busy: the device's busy share with one search and with four at once, their model a double that answers after
   `--model-s` like an API, each step a real evaluation of a small Triton candidate;
3. per_eval: per-evaluation device times of a ranking-suite seed and two ATen-suite problems (with the small Triton
   candidates of benchmarks/data/scale_kernels/), and the N-devices model of scale.py recomputed from them;
4. builds: two searches whose model alternates a Triton candidate and a CUDA extension (a fresh nvcc build each),
   and, from the pool's and the harness's stage records (queue wait, compile, the device's busy intervals),
   whether the GPU waited on a compiler while another evaluation was queued.

    python benchmarks/scale_device.py --out OUT/scale_device.json               # on one CUDA GPU
    python benchmarks/scale_device.py --target cpu --out OUT/scale_device.json  # a CPU smoke run, tiny sizes

Each part has a share of `--seconds` and repeats only while its share lasts. The JSON is written after each part,
the Markdown table (also OUT.md) is printed last.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import scale  # noqa: E402
import scale_records  # noqa: E402

from kernelevolve.eval.evaluator import Evaluator, evaluators  # noqa: E402
from kernelevolve.eval.service.pool import SharedPool  # noqa: E402
from kernelevolve.platforms import get_platform  # noqa: E402
from kernelevolve.problem.candidate import detect_languages  # noqa: E402
from kernelevolve.problem.problem import load_problem  # noqa: E402

KERNELS = ROOT / "benchmarks" / "data" / "scale_kernels"
FIXTURES = ROOT / "tests" / "fixtures"
RELU = FIXTURES / "kb_relu.py"
SHARES = {"rate": 0.18, "busy": 0.37, "per_eval": 0.15, "builds": 0.30}  # of --seconds, in the order they run
# What each target evaluates: (problem, candidate) pairs. On the cpu target every candidate is the fixture's
# relu_ok (a CPU smoke run of the same steps: no Triton interpreter, no compiler).
CUDA = {
    "rate": (ROOT / "examples" / "rmsnorm" / "problem.py", ROOT / "examples" / "rmsnorm" / "candidate_triton.py"),
    "busy": (RELU, KERNELS / "relu_triton.py"),
    "builds": (RELU, KERNELS / "relu_triton.py", KERNELS / "relu_cuda.py"),
    "per_eval": {
        "ranking rmsnorm2d_fwd (seed)": (
            ROOT / "suites" / "ranking" / "rmsnorm2d_fwd" / "problem.py",
            ROOT / "suites" / "ranking" / "rmsnorm2d_fwd" / "seed_triton.py",
        ),
        "aten relu.default": (ROOT / "suites" / "aten" / "relu.default" / "problem.py", KERNELS / "relu_triton.py"),
        "aten sigmoid.default": (
            ROOT / "suites" / "aten" / "sigmoid.default" / "problem.py",
            KERNELS / "sigmoid_triton.py",
        ),
    },
}
RELU_OK = FIXTURES / "candidates" / "relu_ok.py"
CPU = {"rate": (RELU, RELU_OK), "busy": (RELU, RELU_OK), "builds": (RELU, RELU_OK, RELU_OK)}
CPU["per_eval"] = {"kb_relu (relu_ok)": (RELU, RELU_OK)}
# Sizes per target: CLI flags override them.
SIZES = {
    "cuda": {"evaluations": 4, "repeats": 2, "budget_one": 3, "budget_four": 2, "model_s": 6.0, "build_budget": 2},
    "cpu": {"evaluations": 2, "repeats": 2, "budget_one": 2, "budget_four": 1, "model_s": 0.2, "build_budget": 2},
}
PER_EVAL_REPEATS = 2


class Recorded:
    """A device that logs its evaluations and its builds with their wall-clock start and end: the device's own
    account of when it was busy, beside the pool's queue wait and the harness's stages in each result."""

    def __init__(self, device: Evaluator):
        self.device, self.platform = device, device.platform
        self._lock = threading.Lock()
        self._log: list[dict[str, Any]] = []

    def _logged(self, kind: str, candidate: Path, call) -> Any:
        languages = "+".join(detect_languages(candidate.read_text())) or "pytorch"
        started = time.time()
        result = call()
        with self._lock:
            entry = {"kind": kind, "candidate": candidate.name, "languages": languages}
            self._log.append({**entry, "started": started, "ended": time.time()})
            self._log[-1]["result"] = result  # the pool adds its queue wait to this object once it is returned
        return result

    def evaluate(self, problem, candidate, options, /):
        return self._logged("evaluation", Path(candidate), lambda: self.device.evaluate(problem, candidate, options))

    def prebuild(self, problem, candidate):
        return self._logged("build", Path(candidate), lambda: self.device.prebuild(problem, candidate))

    def take(self) -> list[dict[str, Any]]:
        """The log since the last take, as plain data."""
        with self._lock:
            log, self._log = self._log, []
        return [scale_records.plain(entry) for entry in log]

    def close(self) -> None:
        self.device.close()


class Budget:
    """Each part's share of the seconds: a part repeats only while its share lasts (its first run always)."""

    def __init__(self, seconds: float):
        self.seconds, self.start = seconds, time.monotonic()
        self.part_end = self.start

    def begin(self, part: str) -> None:
        self.part_end = max(self.part_end, time.monotonic()) + SHARES[part] * self.seconds

    def allows(self, last_s: float) -> bool:
        return time.monotonic() + last_s <= self.part_end


def repeated(budget: Budget, repeats: int, label: str, least: int = 1):
    """Yields repeat indices: `least` of them, then more while the part's share allows another run as long as the
    last one."""
    last = 0.0
    for i in range(repeats):
        if i >= least and not budget.allows(last):
            print(f"  {label}: repeat {i + 1} skipped, its part's share of --seconds is spent", flush=True)
            return
        t0 = time.monotonic()
        yield i
        last = time.monotonic() - t0


def rate_part(pool: SharedPool, device: Recorded, sizes: dict, budget: Budget, kernels: dict) -> dict:
    """Evaluations per minute with `evaluations` asked at once, after one evaluation that warms the caches (on a
    GPU: Triton's, the CUDA context's)."""
    problem, candidate = load_problem(kernels["rate"][0]), kernels["rate"][1]
    if device.platform.separate_device():
        scale.at_once(pool, problem, candidate, 1, strict=False)
        device.take()
    out: dict[str, Any] = {"candidate": str(candidate.relative_to(ROOT)), "per_minute": [], "evaluations": []}
    for i in repeated(budget, sizes["repeats"], "rate", least=2):  # single runs are noisy (issue 49)
        wall, _ = scale.at_once(pool, problem, candidate, sizes["evaluations"], strict=False)
        out["per_minute"].append(round(60.0 * sizes["evaluations"] / wall, 2))
        out["evaluations"] += scale_records.evaluations(device.take())
        print(f"  rate repeat {i + 1}: {out['per_minute'][-1]} evaluations per minute", flush=True)
    out["device_s_median"] = statistics.median(e["device_s"] for e in out["evaluations"])
    return out


def variants(*paths: Path):
    """A model double's answers: the candidates in turn, each made new (a new source hash; in a CUDA extension's
    file, whose `VARIANT = 0` is part of its source, a new build)."""
    texts = itertools.cycle([p.read_text() for p in paths])
    lock = threading.Lock()

    def variant(rng: random.Random) -> str:
        with lock:
            text = next(texts)
        tag = rng.randrange(1 << 40)
        if "\nVARIANT = 0\n" in text:
            return text.replace("\nVARIANT = 0\n", f"\nVARIANT = {tag}\n")
        return text + f"\nVARIANT = {tag}\n"

    return variant


def searches(pool: SharedPool, device: Recorded, count: int, budget: int, model_s: float, target: str, kinds) -> dict:
    """`count` searches at once on the pool (scale.searches_at_once), their model alternating `kinds[1:]`."""
    problem, seed, *answers = kinds
    device.take()
    model = lambda i: scale.SlowModel(model_s, i, variants(*answers))  # noqa: E731
    wall, _, _ = scale.searches_at_once(pool, count, budget, problem, seed, model, target=target)
    log = device.take()
    return {"searches": count, "budget": budget, "wall_s": round(wall, 2), **scale_records.busy(log, wall), "log": log}


def busy_part(pool: SharedPool, device: Recorded, sizes: dict, budget: Budget, kernels: dict, target: str) -> dict:
    """The device's busy share with one search and with four, repeated while the part's share lasts."""
    problem, seed = kernels["busy"]
    out: dict[str, Any] = {"model_s": sizes["model_s"], "candidate": str(seed.relative_to(ROOT)), "runs": []}
    for i in repeated(budget, sizes["repeats"], "busy"):
        for count, nodes in ((1, sizes["budget_one"]), (4, sizes["budget_four"])):
            run = searches(pool, device, count, nodes, sizes["model_s"], target, (problem, seed, seed))
            run["evaluations"] = scale_records.evaluations(run.pop("log"))
            out["runs"].append(run)
            print(f"  busy repeat {i + 1}, {count} search(es): share {run['share']:.3f} of {run['wall_s']} s, "
                  f"{run['share_from_first']:.3f} from the first evaluation", flush=True)  # fmt: skip
    return out


def per_eval_part(pool: SharedPool, device: Recorded, budget: Budget, kernels: dict, model_s: float) -> dict:
    """Per-evaluation device times of a ranking seed and ATen problems (one at a time), and the N-devices model."""
    out: dict[str, Any] = {"problems": {}}
    for name, (problem_path, candidate) in kernels["per_eval"].items():
        problem = load_problem(problem_path)
        runs = []
        for _ in repeated(budget, PER_EVAL_REPEATS, name):
            scale.at_once(pool, problem, candidate, 1, strict=False)
            runs += scale_records.evaluations(device.take())
        out["problems"][name] = {
            "candidate": str(candidate.relative_to(ROOT)),
            "device_s": [e["device_s"] for e in runs],
            "statuses": [e["status"] for e in runs],
        }
        print(f"  {name}: {out['problems'][name]['device_s']} s ({', '.join(out['problems'][name]['statuses'])})")
    out["model"] = scale_records.devices_model(out["problems"], model_s)
    return out


def builds_part(pool: SharedPool, device: Recorded, sizes: dict, kernels: dict, target: str) -> dict:
    """Two searches whose model alternates a Triton candidate and a CUDA extension: did the GPU wait on a compiler
    while another evaluation was queued (scale_records.compiler_waits)?"""
    run = searches(pool, device, 2, sizes["build_budget"], 0.5, target, kernels["builds"])
    log = run.pop("log")
    return {**run, **scale_records.compiler_waits(log), "builds": scale_records.builds(log)}


def header(target: str) -> dict[str, Any]:
    import torch

    versions = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        pass
    gpu = "none"
    if target == "cuda":  # from nvidia-smi: a CUDA context in this process would hold memory beside each evaluation
        query = ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"]
        try:
            gpu = subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip() or "unknown"
        except OSError:
            gpu = "unknown (no nvidia-smi)"
    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.node()}, {os.cpu_count()} cores, GPU {gpu}, load {os.getloadavg()[0]:.1f} at start",
        "versions": versions,
        "command": " ".join(sys.argv),
        "target": target,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--target", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--seconds", type=float, default=250.0, help="the whole run's wall, shared by its parts")
    parser.add_argument("--parts", default="rate,busy,per_eval,builds")
    for name in SIZES["cuda"]:
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(SIZES["cuda"][name]), default=None)
    args = parser.parse_args(argv)
    if not get_platform(args.target).present():
        parser.error(f"--target {args.target}: this machine has no such device; --target cpu runs the same steps")
    sizes = {k: v if getattr(args, k) is None else getattr(args, k) for k, v in SIZES[args.target].items()}
    kernels = CUDA if args.target == "cuda" else CPU
    out = {**header(args.target), "sizes": sizes, "seconds": args.seconds}
    budget = Budget(args.seconds)
    device = Recorded(evaluators(args.target, "0", timeout_s=300)[0])
    pool = SharedPool([device])
    runs = {
        "rate": lambda: rate_part(pool, device, sizes, budget, kernels),
        "busy": lambda: busy_part(pool, device, sizes, budget, kernels, args.target),
        "per_eval": lambda: per_eval_part(pool, device, budget, kernels, sizes["model_s"]),
        "builds": lambda: builds_part(pool, device, sizes, kernels, args.target),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        for part in [p for p in SHARES if p in args.parts.split(",")]:
            print(f"{part} ({time.monotonic() - budget.start:.0f} s in) ...", flush=True)
            budget.begin(part)
            try:
                out[part] = runs[part]()
            except Exception as e:  # noqa: BLE001 - one part's failure must not cost the device call the others
                traceback.print_exc()
                out[part] = {"failed": f"{type(e).__name__}: {e}"[-600:]}
            args.out.write_text(json.dumps(out, indent=1) + "\n")
    finally:
        pool.close()
    table = scale_records.markdown(out)
    args.out.with_suffix(".md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
