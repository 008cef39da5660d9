"""What every subcommand shares: the app, stderr console, exit codes, option enums."""

from __future__ import annotations

from enum import Enum

import typer
from rich.console import Console

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Search for kernels faster than PyTorch, and prove them correct."
)
err = Console(stderr=True, soft_wrap=True)

EXIT_CORRECT, EXIT_NOT_CORRECT, EXIT_USAGE = 0, 1, 2


class Target(str, Enum):
    cpu = "cpu"
    cuda = "cuda"
    rocm = "rocm"


class Baseline(str, Enum):
    eager = "eager"
    compile = "compile"


def usage_error(message: str) -> typer.Exit:
    """Print a usage error and return the Exit to raise (status 2)."""
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(EXIT_USAGE)


@app.callback()
def main() -> None:
    """KernelEvolve: agentic kernel optimization."""
