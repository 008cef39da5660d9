"""What every subcommand shares: the app, stderr console, exit codes, option choices."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer
from rich.console import Console

from kernelevolve.eval.job import BASELINES, PROFILE_HELP, PROFILES
from kernelevolve.platforms import PLATFORMS

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Search for kernels faster than PyTorch, and prove them correct."
)
err = Console(stderr=True, soft_wrap=True)

EXIT_CORRECT, EXIT_NOT_CORRECT, EXIT_USAGE = 0, 1, 2
__all__ = ["DB", "PROFILE_HELP", "RUNS_DIR", "Baseline", "Profile", "Target", "app", "err", "usage_error"]


# The choices are the engine's own words (platforms, eval/job.py), not a second list of them.
Target = Enum("Target", {name: name for name in PLATFORMS}, type=str)
Baseline = Enum("Baseline", {word: word for word in BASELINES}, type=str)
Profile = Enum("Profile", {word: word for word in PROFILES}, type=str)


RUNS_DIR = typer.Option(Path("runs"), "--runs-dir", help="where runs, their store and artifacts live")
DB = typer.Option(None, "--db", help="SQLAlchemy URL of the store (default: SQLite in the runs directory)")


def usage_error(message: str) -> typer.Exit:
    """Print a usage error and return the Exit to raise (status 2)."""
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(EXIT_USAGE)


@app.callback()
def main() -> None:
    """KernelEvolve: agentic kernel optimization."""
