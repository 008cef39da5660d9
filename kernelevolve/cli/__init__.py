"""The `kernelevolve` command: each subcommand lives in its own module and registers on `app`."""

from kernelevolve.cli import check_problem, eval_cmd, search_cmd  # noqa: F401 - register their commands
from kernelevolve.cli.common import app

__all__ = ["app"]
