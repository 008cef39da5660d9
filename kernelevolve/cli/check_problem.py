"""`kernelevolve check-problem`: can this problem tell a real kernel from a trivial answer?"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import typer
from rich.console import Console
from rich.text import Text

from kernelevolve.cli.common import EXIT_CORRECT, EXIT_NOT_CORRECT, Target, app, err, plain_console, usage_error
from kernelevolve.eval.probes import TRIVIAL, Soundness, check_problem
from kernelevolve.platforms import default_target
from kernelevolve.problem.problem import ProblemError, load_problem


@app.command("check-problem")
def check_problem_command(
    problem: Path = typer.Argument(..., help="problem file (KernelBench format)"),
    target: Target | None = typer.Option(None, help="where to run; default cuda when a GPU is present, else cpu"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
    timeout: float = typer.Option(300.0, help="wall-clock limit per probe, in seconds"),
) -> None:
    """Run trivial-solution probes (zeros, a copy of the first input, the reference's mean) through the harness,
    and check that the reference is deterministic and its outputs are above the tolerance.

    Exit status: 0 sound, 1 a probe passes or a warning was found, 2 malformed problem."""
    tgt = (target.value if target else None) or default_target()
    try:
        prob = load_problem(problem)
        with err.status(f"probing {prob.path.name} on {tgt} ...") if not as_json else _nothing():
            report = check_problem(prob, tgt, timeout_s=timeout)
    except ProblemError as e:
        raise usage_error(str(e)) from None
    if as_json:
        payload = {"sound": report.sound, "probes": [asdict(p) for p in report.probes], "warnings": report.warnings}
        payload["passing"] = [p.name for p in report.passing]
        sys.stdout.write(json.dumps(payload) + "\n")
    else:
        _print(report, plain_console())
    raise typer.Exit(EXIT_CORRECT if report.sound else EXIT_NOT_CORRECT)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _print(report: Soundness, console: Console) -> None:
    """A line per probe, its reason as the harness wrote it; the warnings; the verdict."""
    for p in report.probes:
        if p.name not in TRIVIAL:
            verdict = ("passes", "green") if p.passed else ("fails", "red")
        elif not p.applicable:
            verdict = ("not applicable", "dim")
        else:
            verdict = (
                ("caught", "green")
                if not p.passed
                else ("PASSES: the problem cannot tell it from a kernel", "bold red")
            )
        console.print(Text.assemble(f"probe {p.name:12s} ", verdict, "  ", (p.reason[:160], "dim")))
    for w in report.warnings:
        console.print(Text.assemble(("warning:", "yellow"), f" {w}"))
    console.print(Text("sound", style="bold green") if report.sound else Text("not sound", style="bold red"))
