"""`kernelevolve cache` (where the extension build cache is, and its size) and `kernelevolve cache clear`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import typer

from kernelevolve.cli.common import app, plain_console, usage_error
from kernelevolve.cli.runs_cmd import confirm
from kernelevolve.eval.builds.extension_cache import BUILT, HEADERS, TORCH_HEADER, extensions_root

cache_app = typer.Typer(no_args_is_help=False)
app.add_typer(cache_app, name="cache")


def usage(folder: Path) -> tuple[int, int]:
    """Complete builds (one folder each, holding the build service's marker) and bytes under the folder; symbolic
    links are not followed."""
    builds = sum(1 for p in folder.iterdir() if (p / BUILT).is_file()) if folder.is_dir() else 0
    size = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                size += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass  # removed meanwhile
    return builds, size


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


@cache_app.callback(invoke_without_command=True)
def cache_command(ctx: typer.Context) -> None:
    """The extension build cache: where it is and its size (`cache clear` removes it). It holds torch's header
    precompiled for the last few flag sets of C++ builds too, some 800 MB each.

    It lives under $KERNELEVOLVE_CACHE, else $XDG_CACHE_HOME/kernelevolve, else ~/.cache/kernelevolve."""
    if ctx.invoked_subcommand is not None:
        return
    folder = extensions_root()
    out = plain_console()
    if not folder.is_dir():
        out.print(f"extension builds: none ({folder} does not exist)", highlight=False, markup=False)
        return
    builds, size = usage(folder)
    headers = len(list((folder / HEADERS).glob(f"*/{'/'.join(TORCH_HEADER)}.gch")))  # not a flag set's empty one
    of_which = (
        f" (of which {headers} precompiled torch headers, {human(usage(folder / HEADERS)[1])})" if headers else ""
    )
    out.print(f"extension builds: {builds} in {folder}, {human(size)}{of_which}", highlight=False, markup=False)


@cache_app.command("clear")
def clear_command(
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask (needed when stdin is not a terminal)"),
) -> None:
    """Remove every cached extension build; each is rebuilt when next needed. Not while a search is running."""
    folder = extensions_root()
    out = plain_console()
    if not folder.is_dir():
        out.print(f"nothing to clear: {folder} does not exist", highlight=False, markup=False)
        return
    builds, size = usage(folder)
    confirm(f"remove {builds} extension builds ({human(size)}) in {folder}", yes)
    try:
        shutil.rmtree(folder)
    except OSError as e:
        raise usage_error(f"could not remove all of {folder}: {e}") from None
    out.print(f"removed {folder}: {builds} extension builds, {human(size)}", highlight=False, markup=False)
