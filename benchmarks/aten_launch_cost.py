"""The ATen suite's launch-cost filter (docs/aten.md, "Selection"): per generated problem, each traced call's
device time over an empty kernel's launch, on a CUDA device. `kernelevolve aten generate` drops an operator whose
ratio is under 1.3 at every traced shape; it reads this script's output.

    python benchmarks/aten_launch_cost.py --suite suites/aten --out suites/aten/launch_cost.json [--missing]

With --missing, only the problems whose operator the file at --out lacks are measured, and their ratios are added
to it (each ratio is against the empty launch measured in its own run).

Each timing is the median over CUDA-graph replays of REPEAT back-to-back calls (launch overhead included, as a
model would pay it) divided by REPEAT; the empty kernel is timed the same way. The operators are measured in
child processes: one that sees a capture fail measures nothing more (the CUDA generator keeps the failed
capture's state), and the next operator starts in a fresh one. On a machine without CUDA it exits with one line
(the measurement means nothing on a CPU).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from kernelevolve.problem.problem import bind_case, case_defaults, exec_problem, shape_cases  # noqa: E402

REPEAT = 20
ROUNDS = 15
# A failed capture leaves the CUDA generator's graph state behind ("Offset increment outside graph capture" on
# every later operator): the process that saw one measures nothing more, and the next operator starts afresh.
CAPTURE_FAILED = False


def per_call_ms(fn, repeat: int = REPEAT, rounds: int = ROUNDS) -> float:
    """Median device time of one call, from CUDA-graph replays of `repeat` calls (eager timing where capture
    fails: an operator that synchronises)."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            for _ in range(repeat):
                fn()
        run = graph.replay
    except Exception:  # noqa: BLE001 - not capturable: time the calls themselves
        global CAPTURE_FAILED
        CAPTURE_FAILED = True

        def run() -> None:
            for _ in range(repeat):
                fn()

    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / repeat)
    return statistics.median(times)


def empty_launch_ms() -> float:
    """One empty kernel: a copy of a single element, the cheapest launch ATen makes."""
    src, dst = torch.zeros(1, device="cuda"), torch.zeros(1, device="cuda")
    return per_call_ms(lambda: dst.copy_(src))


def operator_cost(problem: Path, empty_ms: float) -> tuple[str, list[float]]:
    """The problem's ATEN_OPERATOR and its cost in empty launches at each traced shape (SHAPE_CASES)."""
    module = exec_problem(problem)
    cases = shape_cases(module)
    defaults = case_defaults(module, cases)
    model = module.Model().cuda()
    ratios = []
    for case in cases:
        bind_case(module, case, defaults)
        torch.manual_seed(0)
        with torch.device("cuda"):
            inputs = list(module.get_inputs())
        with torch.no_grad():
            ratios.append(round(per_call_ms(lambda inputs=inputs: model(*inputs)) / empty_ms, 3))
    return module.ATEN_OPERATOR, ratios


def measure_from(problems: list[Path], start: int) -> int:
    """Child: measure problems[start:] and print one JSON line each; stop after an operator whose capture failed
    (exit 3), so that the parent goes on in a fresh process."""
    empty = empty_launch_ms()
    print(json.dumps({"empty_launch_ms": empty}), flush=True)
    for index in range(start, len(problems)):
        try:
            op, ratios = operator_cost(problems[index], empty)
            line = {"index": index, "op": op, "ratios": ratios}
        except Exception as e:  # noqa: BLE001 - one operator's failure is recorded, not fatal
            line = {"index": index, "failed": f"{type(e).__name__}: {e}"[:300]}
        print(json.dumps(line), flush=True)
        if CAPTURE_FAILED:
            return 3
    return 0


def measure_all(problems: list[Path]) -> tuple[float, dict, dict]:
    """Parent: run children until every problem has a line; a child that dies without one fails that problem."""
    operators, failed, empties, start = {}, {}, [], 0
    while start < len(problems):
        command = [sys.executable, __file__, "--child-from", str(start), *sys.argv[1:]]
        child = subprocess.run(command, capture_output=True, text=True, check=False)
        done = start
        for raw in child.stdout.splitlines():
            line = json.loads(raw)
            if "empty_launch_ms" in line:
                empties.append(line["empty_launch_ms"])
            elif "op" in line:
                operators[line["op"]] = {"ratios": line["ratios"]}
            else:
                failed[problems[line["index"]].parent.name] = line["failed"]
            done = line.get("index", start - 1) + 1
        if done == start:
            failed[problems[start].parent.name] = f"the measuring process died: {child.stderr[-300:]}"
            done = start + 1
        start = done
    return statistics.median(empties) if empties else float("nan"), operators, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, default=ROOT / "suites" / "aten")
    parser.add_argument("--out", type=Path, default=ROOT / "suites" / "aten" / "launch_cost.json")
    parser.add_argument("--missing", action="store_true", help="measure only the operators --out lacks, and add them")
    parser.add_argument("--child-from", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("aten_launch_cost.py: no CUDA device; the launch-cost filter is measured on a GPU", file=sys.stderr)
        return 2
    problems = sorted(args.suite.glob("*/problem.py"))
    before = json.loads(args.out.read_text()) if args.missing and args.out.exists() else {"operators": {}}
    problems = [p for p in problems if f"aten::{p.parent.name}" not in before["operators"]]
    if args.child_from is not None:
        return measure_from(problems, args.child_from)
    empty, operators, failed = measure_all(problems)
    report = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "empty_launch_ms": empty,
        "operators": {**before["operators"], **operators},
        "failed": failed,
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"{len(operators)} operators measured, {len(failed)} failed -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
