"""What every subcommand shares: the app, stderr console, exit codes, option choices."""

from __future__ import annotations

import errno
import os
from enum import Enum
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from kernelevolve.eval.rules import CORRECTNESS_HELP
from kernelevolve.eval.wire import BASELINES, CORRECTNESS, PROFILE_HELP, PROFILES, TF32_HELP
from kernelevolve.platforms import PLATFORMS
from kernelevolve.store.store import StoreError

# Off a terminal, the width a console lays tables out in: as wide as they are (docs/cli.md, "Output").
FULL_WIDTH = 100_000


def plain_console(stderr: bool = False) -> Console:
    """The one console every command prints with. Its text is data (paths, model names, compiler, kernel and LLM
    messages): `:x:` stays `:x:` (no emoji), `[...]` stays as written (no markup) and nothing is recoloured (no
    highlighting); style with rich Text. Off a terminal (a pipe, a file, CI) tables are as wide as their rows, never
    cut to 80 columns, unless COLUMNS sets a width."""
    console = Console(stderr=stderr, soft_wrap=True, emoji=False, markup=False, highlight=False)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console.width = FULL_WIDTH
    return console


def print_table(console: Console, table: Table) -> None:
    """A table, its cells wrapped to the console's width (a terminal's; off one, full width: plain_console)."""
    console.print(table, soft_wrap=False)


def against_baseline(speedup: float, baseline: str = "eager") -> str:
    """A speedup (a correct kernel's fitness) in words: '3.1x slower than PyTorch eager (the baseline)'."""
    name = "PyTorch eager" if baseline == "eager" else "torch.compile"
    if speedup >= 1.0:
        return f"{speedup:.3g}x faster than {name} (the baseline)"
    return f"{1.0 / speedup:.3g}x slower than {name} (the baseline)"


def literal(help_text: str) -> str:
    """An option's help as written: typer reads help as rich markup, where `[default: 20]` would be a tag."""
    return escape(help_text)


err = plain_console(stderr=True)


class _Commands(TyperGroup):
    """Every command's errors that are the user's to fix end as one line and exit status 2, not a traceback: the
    store's (StoreError: a read-only or full store, a missing database driver) and a full disk anywhere."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except StoreError as e:
            raise usage_error(str(e)) from None
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            where = f" writing {e.filename}" if e.filename else ""
            raise usage_error(f"the disk is full (no space left){where}: free some space, then retry") from None


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    help="Search for kernels faster than PyTorch, and prove them correct.",
)

EXIT_CORRECT, EXIT_NOT_CORRECT, EXIT_USAGE = 0, 1, 2
__all__ = [
    "ALLOW_TF32",
    "CORRECTNESS",
    "DB",
    "LLM",
    "LLM_HELP",
    "LLM_TIMEOUT",
    "MAX_INFLIGHT",
    "PROFILE_HELP",
    "RUNS_DIR",
    "Baseline",
    "Correctness",
    "Profile",
    "Target",
    "against_baseline",
    "app",
    "err",
    "literal",
    "plain_console",
    "print_table",
    "usage_error",
]


# The choices are the engine's own words (platforms, eval/wire.py), not a second list of them.
Target = Enum("Target", {name: name for name in PLATFORMS}, type=str)
Baseline = Enum("Baseline", {word: word for word in BASELINES}, type=str)
Profile = Enum("Profile", {word: word for word in PROFILES}, type=str)
Correctness = Enum("Correctness", {word: word for word in CORRECTNESS}, type=str)
CORRECTNESS = typer.Option(Correctness.measured, "--correctness", help=CORRECTNESS_HELP)
ALLOW_TF32 = typer.Option(False, "--allow-tf32", help=TF32_HELP)


LLM_HELP = (
    "PROVIDER:MODEL[=WEIGHT], repeatable (an ensemble): openai, anthropic, vllm, sglang, ollama, lmstudio; "
    "exec:'CMD' (the prompt on CMD's stdin, the answer on its stdout); inbox:DIR (prompts written to DIR, answers "
    "read from it: a run with unanswered calls stops as waiting, and the same command again serves them); "
    "openai-batch:MODEL, anthropic-batch:MODEL (OpenAI's Batch API, Anthropic's Message Batches, deferred the "
    "same way); replay:RUN"
)
LLM = typer.Option([], "--llm", envvar="KERNELEVOLVE_LLM", help=LLM_HELP)
LLM_TIMEOUT = typer.Option(300.0, "--llm-timeout", min=1, help="seconds one model call may take (exec, APIs)")
MAX_INFLIGHT = typer.Option(
    None,
    "--max-inflight",
    min=1,
    help=literal(
        "steps in flight at once [default: devices + 1]; with a deferred model (inbox, batch), calls per round"
    ),
)


# readable=False: the store, not the option parser, says what is wrong with the folder (kernelevolve/store/store.py).
RUNS_DIR = typer.Option(Path("runs"), "--runs-dir", readable=False, help="where runs, their store and artifacts live")
DB = typer.Option(
    None,
    "--db",
    help="SQLAlchemy URL of the store, e.g. postgresql://USER:PASSWORD@HOST/DB (default: SQLite in the runs directory)",
)


def usage_error(message: str) -> typer.Exit:
    """Print a usage error and return the Exit to raise (status 2). The message is printed as written."""
    err.print(Text.assemble(("error:", "bold red"), " ", message))
    return typer.Exit(EXIT_USAGE)


def _version(asked: bool) -> None:
    if asked:
        try:
            number = version("kernelevolve")
        except PackageNotFoundError:
            number = "unknown"
        typer.echo(f"kernelevolve {number}")
        raise typer.Exit(0)


@app.callback()
def main(
    show_version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="print the version and exit"
    ),
) -> None:
    """KernelEvolve: agentic kernel optimization."""
