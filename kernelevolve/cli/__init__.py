"""The `kernelevolve` command: each subcommand lives in its own module and registers on `app`."""

from kernelevolve.cli import (  # noqa: F401 - each module registers its commands
    aten_cmd,
    bench_cmd,
    cache_cmd,
    check_problem,
    eval_cmd,
    kb_cmd,
    model_cmd,
    prove_cmd,
    report_cmd,
    runs_cmd,
    search_cmd,
)
from kernelevolve.cli.common import app

__all__ = ["app"]
