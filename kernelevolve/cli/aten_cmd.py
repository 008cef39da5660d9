"""`kernelevolve trace` (the ATen operators a model calls) and `kernelevolve aten generate` (the suite from
traces and OpInfo); docs/aten.md."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from kernelevolve.cli.common import app, err, usage_error

aten_app = typer.Typer(help="The ATen operator suite (docs/aten.md).", no_args_is_help=True)
app.add_typer(aten_app, name="aten")


@app.command("trace")
def trace_command(
    entry: str = typer.Argument(..., help="MODULE:FUNCTION; FUNCTION() returns (model, example_inputs)"),
    out: Path = typer.Option(..., "--out", help="where to write the trace (JSON)"),
    train: bool = typer.Option(False, "--train", help="trace a training step (forward, loss, backward)"),
) -> None:
    """Run a model once and record every ATen operator it calls: argument shapes, dtypes, strides and
    non-tensor arguments, and each operator's share of the step's time (torch.profiler, on the model's device)."""
    from kernelevolve.aten.trace import TraceError, dumps, trace_entry

    try:
        trace = trace_entry(entry, train=train)
    except TraceError as e:
        raise usage_error(str(e)) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(trace))
    err.print(f"{len(trace['operators'])} operators, {trace['calls']} calls ({trace['step']}) -> {out}")


@aten_app.command("generate")
def generate_command(
    traces: Path = typer.Option(Path("suites/aten/traces"), "--traces", help="folder of trace JSON files"),
    out: Path = typer.Option(Path("suites/aten"), "--out", help="the suite's folder (problems under it)"),
    launch_cost: Path = typer.Option(
        Path("suites/aten/launch_cost.json"),
        "--launch-cost",
        help="benchmarks/aten_launch_cost.py's output; without it the launch-cost filter is skipped",
    ),
    only: list[str] = typer.Option([], "--op", help="generate only these operators (aten::NAME.OVERLOAD)"),
) -> None:
    """Generate one problem per ATen operator that the traced models call and OpInfo has samples for."""
    os.environ.setdefault("PYTORCH_TEST_WITH_SLOW", "0")
    from kernelevolve.aten.generate import GenerateError, generate

    try:
        summary = generate(traces, out, launch_cost if launch_cost.is_file() else None, only or None)
    except GenerateError as e:
        raise usage_error(str(e)) from None
    for line in summary:
        err.print(line)
