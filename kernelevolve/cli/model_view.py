"""The Amdahl table on a console: a rich table on a terminal, plain aligned text elsewhere (docs/model.md)."""

from __future__ import annotations

import math

from rich import box
from rich.console import Console
from rich.table import Table

from kernelevolve.cli.common import print_table
from kernelevolve.model.profile import Profile
from kernelevolve.model.table import Row, amdahl, predicted

SHOWN = 30  # rows shown; the rest are summed in one line
SIGNATURE_WIDTH = 72  # a longer signature is cut in the table (model.json has it whole)


def _x(value: float | None) -> str:
    if value is None:
        return "-"
    return "inf" if math.isinf(value) else f"{value:.3f}x"


def _table(rows: list[Row], picked: set[str], assume: float | None, searched: bool, terminal: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAVY if terminal else None, show_edge=terminal, pad_edge=False)
    for heading in ("#", "name", "kind", "signature", "calls", "ms", "share", "if free"):
        table.add_column(heading, justify="right" if heading in ("#", "calls", "ms", "share", "if free") else "left")
    if assume:
        table.add_column(f"at {assume:g}x", justify="right")
    if searched:
        table.add_column("measured", justify="right")
        table.add_column("end to end", justify="right")
    table.add_column("no problem because")
    for i, r in enumerate(rows[:SHOWN], 1):
        name = r.name + (" *" if r.name in picked else "")
        signature = r.signature if len(r.signature) <= SIGNATURE_WIDTH else r.signature[: SIGNATURE_WIDTH - 3] + "..."
        cells = [str(i), name, r.kind, signature, str(r.calls), f"{r.time_ms:.3g}", f"{100 * r.share:.1f}%"]
        cells.append(_x(amdahl(r.share, math.inf)))
        if assume:
            cells.append(_x(amdahl(r.share, assume)))
        if searched:
            won = r.measured if r.measured and r.measured > 1.0 else None
            cells += [_x(r.measured) if r.status else "-", _x(amdahl(r.share, won)) if won else "-"]
        table.add_row(*cells, "" if r.extractable else r.reason)
    return table


def show(
    console: Console, profile: Profile, rows: list[Row], picked: set[str], assume: float | None, notes: list[str]
) -> None:
    """The table, the rows it leaves out, the forward's times and what the table cannot say."""
    searched = any(r.status for r in rows)
    print_table(console, _table(rows, picked, assume, searched, console.is_terminal))
    rest = rows[SHOWN:]
    if rest:
        console.print(f"... {len(rest)} more rows, {100 * sum(r.share for r in rest):.1f}% of the operators' time")
    compiled = f", under torch.compile {profile.compiled_ms:.4g} ms" if profile.compiled_ms else ""
    console.print(
        f"forward on {profile.target}: operators {profile.operators_ms:.4g} ms (the shares' denominator; times "
        f"attributed {profile.attribution}), wall time eager {profile.eager_ms:.4g} ms{compiled}"
    )
    extractable = sum(r.share for r in rows if r.extractable and r.kind == "operator")
    console.print(
        f"if free: the end-to-end speedup if the row took no time; every extractable operator row free: "
        f"{_x(amdahl(extractable, math.inf))}; * picked"
    )
    if searched:
        console.print(f"predicted end to end from the measured speedups (Amdahl): {_x(predicted(rows))}")
    for note in [*profile.notes, *notes]:
        console.print(f"note: {note}")
