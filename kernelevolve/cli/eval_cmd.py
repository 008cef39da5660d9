"""`kernelevolve eval`: one candidate, one verdict."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelevolve.cli.common import (
    ALLOW_TF32,
    CORRECTNESS,
    EXIT_CORRECT,
    EXIT_NOT_CORRECT,
    PROFILE_HELP,
    Baseline,
    Correctness,
    Profile,
    Target,
    against_baseline,
    app,
    err,
    plain_console,
    print_table,
    usage_error,
)
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.wire import STAGE_LINE
from kernelevolve.platforms import PLATFORMS, default_target
from kernelevolve.problem.problem import ProblemError, load_problem
from kernelevolve.result import EvalResult, Status


@app.command("eval")
def eval_command(
    problem: Path = typer.Argument(..., help="problem file (KernelBench format)"),
    candidate: Path = typer.Argument(..., help="candidate file defining ModelNew"),
    target: Target | None = typer.Option(None, help="where to run; default cuda when a GPU is present, else cpu"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
    timeout: float = typer.Option(300.0, help="hard wall-clock limit for the evaluation, in seconds"),
    compile_timeout: float = typer.Option(
        600.0, help="limit on compiles (C++/CUDA extension builds, torch.compile), in seconds, apart from --timeout"
    ),
    trials: int = typer.Option(3, min=1, help="correctness trials with fresh inputs per shape case"),
    baseline: Baseline = typer.Option(Baseline.eager, help="the baseline fitness is measured against"),
    no_compile_baseline: bool = typer.Option(
        False, "--no-compile-baseline", help="do not time the torch.compile baseline"
    ),
    memory_limit_gb: float | None = typer.Option(
        None, help="cpu target: cap the worker's memory (default: half the RAM)"
    ),
    allow_torch: bool = typer.Option(
        False, "--allow-torch", help="turn the kernel policy off (on by default for GPU targets)"
    ),
    require_kernel: bool = typer.Option(
        False, "--require-kernel", help="turn the kernel policy on (off by default on cpu)"
    ),
    profile: Profile = typer.Option(Profile.auto, help=PROFILE_HELP),
    copy_floor: bool = typer.Option(
        False,
        "--copy-floor",
        help="also time a device copy of each case's minimum bytes (what a memory-bound kernel can approach)",
    ),
    correctness: Correctness = CORRECTNESS,
    allow_tf32: bool = ALLOW_TF32,
) -> None:
    """Evaluate one candidate: correctness on fresh inputs for every shape case, then timing against PyTorch.

    Exit status: 0 correct, 1 not correct (or inconclusive: a timing check failed on a contended host), 2 usage or
    problem error."""
    tgt = (target.value if target else None) or default_target()
    try:
        prob = load_problem(problem)
    except ProblemError as e:
        raise usage_error(str(e)) from None
    if not candidate.is_file():
        raise usage_error(f"{candidate}: no such candidate file")
    if allow_torch and require_kernel:
        raise usage_error("--allow-torch and --require-kernel contradict each other")
    policy = False if allow_torch else True if require_kernel else None
    if baseline is Baseline.compile and no_compile_baseline:
        raise usage_error("--baseline compile needs the torch.compile baseline; drop --no-compile-baseline")
    if baseline is Baseline.compile and not PLATFORMS[tgt].compile_baseline and not as_json:
        err.print(f"note: on the {tgt} target torch.compile is timed only when asked; it compiles for each case")
    if PLATFORMS[tgt].separate_device():
        try:
            PLATFORMS[tgt].candidate_in_judge()
        except ValueError as e:
            raise usage_error(str(e)) from None
    limit = int(memory_limit_gb * 2**30) if memory_limit_gb else None
    with Evaluator(tgt, timeout_s=timeout, memory_limit=limit, compile_timeout_s=compile_timeout) as ev:
        spinner = nullcontext() if as_json else err.status(f"evaluating {candidate.name} on {tgt} ...")
        try:
            with spinner:
                result = ev.evaluate(
                    prob,
                    candidate,
                    trials=trials,
                    baseline=baseline.value,
                    compile_baseline=False if no_compile_baseline else None,
                    require_kernel=policy,
                    profile=profile.value,
                    copy_floor=copy_floor,
                    correctness=correctness.value,
                    allow_tf32=allow_tf32,
                )
        except ProblemError as e:
            raise usage_error(str(e)) from None
    if as_json:
        sys.stdout.write(json.dumps(result.model_dump(mode="json")) + "\n")
    else:
        print_result(result, plain_console())
    raise typer.Exit(EXIT_CORRECT if result.correct else EXIT_NOT_CORRECT)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def print_result(result: EvalResult, console: Console) -> None:
    """The verdict, its reason and notes, a table per shape case and the speedup; text from the harness, the
    compiler and the kernel is printed as written (console: plain_console)."""
    colour = "green" if result.correct else "yellow" if result.status is Status.INCONCLUSIVE else "red"
    console.print(
        Text.assemble(
            (result.status.value, f"bold {colour}"),
            f"  target={result.target} device={result.device} languages={','.join(result.languages)} "
            f"baseline={result.baseline}",
        )
    )
    if result.reason:
        console.print(f"reason: {result.reason}")
    rules = sorted({c.correctness for c in result.cases if c.correctness})
    if rules:
        console.print(f"correctness: {'; '.join(rules)}")
    if result.memory:
        console.print(f"memory: {result.memory}")
    if result.sandbox:  # what confined the candidate, or why nothing did: said in every result
        style = "yellow" if result.sandbox.startswith("none") else "dim"
        console.print(Text.assemble(("sandbox:", style), f" {result.sandbox}"))
    if result.compile_baseline:
        console.print(f"note: {result.compile_baseline}")
    for note in result.review:
        console.print(Text.assemble(("review:", "yellow"), f" {note}"))
    if result.cases:
        print_table(console, _cases_table(result))
    if result.interpreted:
        console.print("timing: not measured (Triton ran in its interpreter on the CPU)")
    elif result.speedup:
        console.print(
            Text.assemble(
                "speedup (geometric mean over cases): ",
                (f"{result.speedup:.3f}x", "bold"),
                f"  fitness {result.fitness:.3f}: {against_baseline(result.speedup, result.baseline)}",
            )
        )
    if result.unreliable:
        console.print(Text.assemble(("unreliable:", "yellow"), f" {result.unreliable}"))
    if result.profile:
        console.print(f"profile: {_profile_line(result.profile)}")
    stages = ", ".join(f"{k} {v:.2f}s" for k, v in result.stages.items())
    if stages:
        console.print(f"stages: {stages}")
    if not result.correct and _log_worth_showing(result):
        console.print(Text("worker log (tail):", style="dim"))
        console.print(result.log_tail.strip()[-1500:])


def _log_worth_showing(result: EvalResult) -> bool:
    """A failure's worker log, unless it is a compile error's and holds only the worker's stage lines (the reason
    says it all: the compiler's errors, or the candidate's exception and frames)."""
    lines = [line for line in result.log_tail.strip().splitlines() if line.strip()]
    if result.status is Status.COMPILE_ERROR:
        return any(not line.startswith(STAGE_LINE) for line in lines)
    return bool(lines)


def _no(text: str) -> Text:
    return Text(text, style="red" if text == "no" else "")


def _cases_table(result: EvalResult) -> Table:
    """One row per shape case; a column only where some case has a value."""
    columns = [
        ("case", lambda c: " ".join(f"{k}={v}" for k, v in c.shape.items()) or "-"),
        ("correct", lambda c: "yes" if c.correct else "no"),
        ("max abs err", lambda c: f"{c.max_abs_err:.1e}" if c.max_abs_err is not None else "-"),
        ("error / own", lambda c: f"{c.error_ratio:.2g}x" if c.error_ratio is not None else "-"),
        ("KernelBench", lambda c: {True: "yes", False: "no", None: "-"}[c.kernelbench_correct]),
        ("candidate ms", lambda c: _ms(c.t_candidate_ms)),
        ("eager ms", lambda c: _ms(c.t_eager_ms)),
        ("compile ms", lambda c: _ms(c.t_compile_ms)),
        ("copy of its bytes ms", lambda c: _ms(c.t_copy_ms)),
        ("speedup", lambda c: f"{c.speedup:.2f}x" if c.speedup else "-"),
        ("graph speedup", lambda c: f"{c.speedup_graph:.2f}x" if c.speedup_graph else "-"),
    ]
    shown = [(name, f) for name, f in columns if any(f(c) != "-" for c in result.cases)]
    table = Table(*[name for name, _ in shown])
    for c in result.cases:
        table.add_row(*[_no(f(c)) for _, f in shown])
    return table


def _profile_line(profile: dict) -> str:
    """One line of what eval/profiling.py collected (the full record is in --json)."""
    parts = [
        f"{t.get('kernel')}: {t.get('n_regs')} regs, {t.get('n_spills')} spills, {t.get('shared')} B shared, "
        f"{t.get('num_warps')} warps, {t.get('num_stages')} stages"
        for t in (profile.get("triton") or [])[:3]
    ]
    if "launches" in profile:
        parts.append(f"{profile['launches']} launches per forward call")
    ncu = profile.get("ncu")
    if isinstance(ncu, str):
        parts.append(ncu)
    elif ncu:
        top = max(ncu, key=lambda k: k.get("time_us") or 0.0)
        parts.append(f"ncu {top.get('name')}: DRAM {top.get('dram_pct', '?')}%, SM {top.get('sm_pct', '?')}%")
    return "; ".join(parts) or "nothing collected"
