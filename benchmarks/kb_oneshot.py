"""Honest kernels' verdicts under the measured rule and KernelBench's: the false-rejection rate.

Two kinds of folder. A one-shot folder holds `problems/NAME.py` (KernelBench files as published),
`prompts/prompt-NAME.md` (what `kernelevolve optimize PROBLEM --dry-run` wrote) and `answers/NAME.md` (one model
reply per prompt); each answer goes through the operator's own parser (`apply_response`, as a search would take it).
A suite (`ranking`, or a folder of `<name>/problem.py`) contributes each problem's seed for the target and its
`candidate_*.py` starts, as `bench` finds them. Every kernel is evaluated on the target under each rule; the JSON
records both verdicts, the error over the reference's own rounding error, the memory plan, the harness's peak
device memory and each evaluation's stages (the float64 oracle's share among them).

    python benchmarks/kb_oneshot.py benchmarks/data/kb_oneshot_2026-12-01 --out results.json [--only NAME,...]
    python benchmarks/kb_oneshot.py ranking --out seeds.json --rules measured
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevolve.eval.evaluator import Evaluator  # noqa: E402
from kernelevolve.operators.edits import EditError, apply_response  # noqa: E402
from kernelevolve.problem.problem import load_problem  # noqa: E402
from kernelevolve.suites.bench import SuiteError, discover  # noqa: E402


def _one_shot_jobs(folder: Path) -> list[tuple[str, Path, Path]]:
    """(name, problem, answer) per KernelBench problem of a one-shot folder."""
    return [(p.stem, p, folder / "answers" / f"{p.stem}.md") for p in sorted((folder / "problems").glob("*.py"))]


def _suite_jobs(suite: str, target: str) -> list[tuple[str, Path, Path]]:
    """(problem/kernel, problem, kernel file) for each seed and candidate_* start the target can run."""
    jobs = []
    for item in discover(suite, target):
        for kernel in ([item.seed] if item.seed else []) + item.starts:
            jobs.append((f"{item.name}/{kernel.stem}", item.problem, kernel))
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "folder", help="a one-shot folder (problems/, answers/), or a suite: ranking or a folder of problems"
    )
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--only", default="", help="names (one-shot: file stems; suite: problem folders), comma-separated")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--rules", default="measured,kernelbench")
    args = ap.parse_args()
    one_shot = (Path(args.folder) / "answers").is_dir()
    try:
        jobs = _one_shot_jobs(Path(args.folder)) if one_shot else _suite_jobs(args.folder, args.target)
    except SuiteError as e:
        raise SystemExit(f"{args.folder}: neither a one-shot folder (no answers/) nor a suite: {e}") from None
    wanted = {n for n in args.only.split(",") if n}
    known = {name.split("/")[0] for name, _, _ in jobs}
    unknown = sorted(wanted - known)
    if unknown:
        raise SystemExit(
            f"--only: no problem named {', '.join(unknown)} in {args.folder} (known: {', '.join(sorted(known))})"
        )
    rows = json.loads(args.out.read_text()) if args.out.is_file() else []
    done = {(r["name"], r["rule"]) for r in rows}
    kernels = args.out.parent / "kernels"
    kernels.mkdir(parents=True, exist_ok=True)
    with Evaluator(args.target, timeout_s=args.timeout) as ev:
        for name, problem_path, given in jobs:
            if wanted and name.split("/")[0] not in wanted:
                continue
            for rule in args.rules.split(","):
                if (name, rule) in done:
                    continue
                row: dict = {"name": name, "rule": rule}
                if one_shot:
                    try:
                        source, _ = apply_response(given.read_text(), None)
                    except (OSError, EditError) as e:
                        row.update(status="unusable", reason=str(e))
                        rows.append(row)
                        args.out.write_text(json.dumps(rows, indent=1))
                        print(f"{name:40s} {rule:11s} unusable       {row['reason'][:160]}", flush=True)
                        continue
                    kernel = kernels / f"{name}.py"
                    kernel.write_text(source)
                else:
                    kernel = given
                t0 = time.perf_counter()
                result = ev.evaluate(load_problem(problem_path), kernel, correctness=rule, compile_baseline=False)
                row.update(
                    status=result.status.value,
                    reason=result.reason,
                    wall_s=round(time.perf_counter() - t0, 1),
                    speedup=result.speedup,
                    kernelbench_correct=result.kernelbench_correct,
                    error_ratio=[c.accuracy.error_ratio for c in result.cases],
                    max_abs_err=[c.accuracy.max_abs_err for c in result.cases],
                    norm_err=[c.accuracy.norm_err for c in result.cases],
                    case_reasons=[c.reason for c in result.cases],
                    memory=result.memory,
                    harness_peak_gb=round((result.harness_peak_bytes or 0) / 1e9, 2),
                    stages={k: round(v, 2) for k, v in result.stages.items()},
                    log_tail=result.log_tail[-1500:] if not result.correct else "",
                )
                rows.append(row)
                args.out.write_text(json.dumps(rows, indent=1))  # after every evaluation: a cut run keeps its rows
                print(
                    f"{name:40s} {rule:11s} {row['status']:14s} ratio={row.get('error_ratio')} "
                    f"kb={row.get('kernelbench_correct')} peak={row.get('harness_peak_gb')} "
                    f"oracle={row.get('stages', {}).get('load.oracle')} wall={row.get('wall_s')} "
                    f"{row.get('reason', '')[:160]}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
