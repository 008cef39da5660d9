"""`kernelevolve prove ENTRY --out DIR`: the end-to-end proof of the model swapped with DIR's kernels (after
`kernelevolve model ENTRY --out DIR --search`): outputs checked, the forward timed per variant, the Amdahl table's
prediction beside the measured gain, DIR/e2e.json and DIR/e2e.html (docs/model.md, "The end-to-end proof")."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.table import Table

from kernelevolve.cli.common import Target, app, err, plain_console, print_table, usage_error

EXIT_DIFFERS = 1  # the swapped model's outputs (or gradients) are beyond the rule
ENTRY = typer.Argument(..., help="MODULE:FUNCTION or recipe:NAME, as `kernelevolve model` took it")
OUT = typer.Option(Path("model"), "--out", help="the folder `kernelevolve model --search` wrote (model.json, kernels/)")
VARIANTS = typer.Option(
    "eager,compile,swapped,swapped-compile",
    "--variants",
    help="comma-separated, of eager, compile, max-autotune, swapped, swapped-compile (each with CUDA graphs off and "
    "on where the target has them)",
)
BATCHES = typer.Option(3, "--batches", min=1, help="fresh batches the outputs are checked on")
TRAIN = typer.Option(False, "--train", help="also check one training step's gradients, parameter by parameter")
LOSS = typer.Option(None, "--loss", help="MODULE:FUNCTION, loss(outputs) -> scalar, for --train (default: the sum)")
RUNS = typer.Option(20, "--runs", min=2, help="timed forwards per variant (the median and the 90th percentile)")


@app.command("prove")
def prove_command(
    entry: str = ENTRY,
    target: Target | None = typer.Option(None, help="cpu or cuda; default cuda when a GPU is present"),
    out: Path = OUT,
    variants: str = VARIANTS,
    batches: int = BATCHES,
    train: bool = TRAIN,
    loss: str | None = LOSS,
    runs: int = RUNS,
) -> None:
    """Check the swapped model's outputs against the original's over fresh batches (the measured rule), time its
    forward against eager and torch.compile, and set the measured end-to-end gain beside the Amdahl prediction."""
    from kernelevolve.model.e2e import E2E_HTML, ProofError, ProofOptions, prove, write_json
    from kernelevolve.model.e2e_check import CheckError
    from kernelevolve.model.e2e_timing import VariantError, parse_variants
    from kernelevolve.model.entry import ModelError, load
    from kernelevolve.platforms import default_target
    from kernelevolve.report.html import ReportError, write_e2e_report

    if loss and not train:
        raise usage_error("--loss is the gradients' loss: give --train with it")
    try:
        options = ProofOptions(parse_variants(variants), batches, train, _loss(loss) if loss else None, runs)
        loaded = load(entry, (target.value if target else None) or default_target())
        data = prove(loaded, out, options, lambda line: err.print(line))
        json_path = write_json(out, data)
        html_path = write_e2e_report(out / E2E_HTML, data)
    except (VariantError, ModelError, ProofError, CheckError, ReportError) as e:
        raise usage_error(str(e)) from None
    show(data)
    err.print(f"written: {json_path}, {html_path}")
    if not data["ok"]:
        raise typer.Exit(EXIT_DIFFERS)


def _loss(text: str) -> Any:
    module_name, sep, function_name = text.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), function_name) if sep else None
    except Exception as e:  # noqa: BLE001 - any import failure is the option's
        raise usage_error(f"--loss {text}: cannot import {module_name} ({type(e).__name__}: {e})") from None
    if not callable(function):
        raise usage_error(f"--loss {text}: expected MODULE:FUNCTION naming a function, loss(outputs) -> scalar")
    return function


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}x"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def show(data: dict[str, Any]) -> None:
    """The checks' verdict, the variants' times and the Amdahl table with the measured gain, as plain tables."""
    console = plain_console()
    terminal = console.is_terminal
    for check in data["checks"]:
        worst = max((leaf["worst_ratio"] or 0.0 for leaf in check["leaves"]), default=0.0)
        verdict = "equal" if check["ok"] else "DIFFER"
        console.print(f"{check['what']} over {check['batches']} batches: {verdict} (worst {worst:.3g}x the "
                      f"original's own rounding error; {check['rule']})")  # fmt: skip
        for leaf in check["leaves"]:
            if not leaf["ok"]:
                console.print(f"  {check['what']}: {leaf['name']}: {leaf['reason']}")
    times = Table(box=box.SIMPLE_HEAVY if terminal else None, show_edge=terminal, pad_edge=False)
    for heading in ("variant", "median ms", "p90 ms", f"rows/s (batch {data['batch']})", "vs eager", "first call s"):
        times.add_column(heading, justify="left" if heading == "variant" else "right")
    times.add_column("error")
    for v in data["variants"]:
        first = "-" if v["compile_s"] is None else f"{v['compile_s']:.3g}"
        rate = "-" if v["throughput"] is None else f"{v['throughput']:.4g}"
        times.add_row(v["label"], _ms(v["median_ms"]), _ms(v["p90_ms"]), rate, _x(v["vs_eager"]), first, v["error"])
    print_table(console, times)
    if not data["graphs"]["on"]:
        console.print(f"device graphs off: {data['graphs']['why_off']}")
    _amdahl(console, data["amdahl"], terminal)
    for note in data["notes"]:
        console.print(f"note: {note}")


def _amdahl(console: Any, section: dict[str, Any], terminal: bool) -> None:
    table = Table(box=box.SIMPLE_HEAVY if terminal else None, show_edge=terminal, pad_edge=False)
    for heading in ("row", "kind", "share", "kernel", "predicted", "in the model"):
        table.add_column(heading, justify="left" if heading in ("row", "kind") else "right")
    for r in section["rows"]:
        where = {True: "yes", False: "no", None: "unknown"}[r["in_model"]]
        table.add_row(r["name"], r["kind"], f"{100 * r['share']:.1f}%", _x(r["kernel_speedup"]), _x(r["predicted"]),
                      where)  # fmt: skip
    print_table(console, table)
    error = "-" if section["error"] is None else f"{100 * section['error']:.1f}%"
    best = section["best_baseline"] or "-"
    console.print(
        f"end to end: predicted {_x(section['predicted'])} (Amdahl over the shares; on the eager wall time "
        f"{_x(section['predicted_wall'])}), measured {_x(section['measured_vs_eager'])} over eager, "
        f"{_x(section['measured_vs_best'])} over the faster of eager and torch.compile ({best}); "
        f"|predicted - measured| / measured {error}"
    )
