"""KernelBench problems, unchanged, against one-shot kernels written from the project's own draft prompts.

The folder holds `problems/NAME.py` (KernelBench files as published), `prompts/prompt-NAME.md` (what
`kernelevolve optimize PROBLEM --dry-run` wrote) and `answers/NAME.md` (one model reply per prompt). Each answer
goes through the operator's own parser (`apply_response`, as a search would take it) and is evaluated on the
target under the measured rule and under KernelBench's; the JSON records both verdicts, the error over the
reference's own rounding error, the memory plan, the harness's peak device memory and each evaluation's stages.

    python benchmarks/kb_oneshot.py docs/benchmarks/data/kb_oneshot_2026-12-01 --out results.json [--only NAME,...]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--only", default="")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--rules", default="measured,kernelbench")
    args = ap.parse_args()
    wanted = {n for n in args.only.split(",") if n}
    unknown = sorted(wanted - {p.stem for p in (args.folder / "problems").glob("*.py")})
    if unknown:
        raise SystemExit(f"--only: no problem named {', '.join(unknown)} in {args.folder / 'problems'} (file stems)")
    rows = json.loads(args.out.read_text()) if args.out.is_file() else []
    done = {(r["name"], r["rule"]) for r in rows}
    kernels = args.out.parent / "kernels"
    kernels.mkdir(parents=True, exist_ok=True)
    with Evaluator(args.target, timeout_s=args.timeout) as ev:
        for problem_path in sorted((args.folder / "problems").glob("*.py")):
            name = problem_path.stem
            if wanted and name not in wanted:
                continue
            answer = args.folder / "answers" / f"{name}.md"
            for rule in args.rules.split(","):
                if (name, rule) in done:
                    continue
                row: dict = {"name": name, "rule": rule}
                try:
                    source, _ = apply_response(answer.read_text(), None)
                except (OSError, EditError) as e:
                    row.update(status="unusable", reason=str(e))
                else:
                    kernel = kernels / f"{name}.py"
                    kernel.write_text(source)
                    t0 = time.perf_counter()
                    result = ev.evaluate(load_problem(problem_path), kernel, correctness=rule, compile_baseline=False)
                    row.update(
                        status=result.status.value,
                        reason=result.reason,
                        wall_s=round(time.perf_counter() - t0, 1),
                        speedup=result.speedup,
                        kernelbench_correct=result.kernelbench_correct,
                        error_ratio=[c.error_ratio for c in result.cases],
                        max_abs_err=[c.max_abs_err for c in result.cases],
                        norm_err=[c.norm_err for c in result.cases],
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
