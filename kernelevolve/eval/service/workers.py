"""`--workers`: where evaluations run. `local` (the default): one evaluator per device of this machine, today's
pool; `ray` (a cluster started here, or the one this machine is part of), `auto` (the running cluster) or
`ray://HOST:PORT` (a cluster through Ray Client): eval/service/ray_pool.py. Either way a `SharedPool`, scheduled per
evaluation across every search that uses it. docs/cli.md ("Running on a cluster")."""

from __future__ import annotations

import socket
from typing import Any

from kernelevolve.eval.evaluator import Evaluator, evaluators
from kernelevolve.eval.service.pool import SharedPool

WORKERS_HELP = (
    "where evaluations run: local (this machine's --devices), ray (a Ray cluster: this machine's, else one started "
    "here), auto (the running Ray cluster) or ray://HOST:PORT (Ray Client); docs/cli.md"
)


def ray_address(workers: str) -> str | None:
    """The address `ray.init` is given for a --workers value; None for the local pool. ValueError for a value
    that is none of them."""
    if workers == "local":
        return None
    if workers == "ray":
        return ""
    if workers == "auto" or workers.startswith("ray://"):
        return workers
    raise ValueError(f"--workers {workers!r}: give local, ray, auto or ray://HOST:PORT")


def _where(evaluator: Evaluator) -> str:
    gpu = evaluator.platform.separate_device()
    return f"{socket.gethostname()} " + (f"GPU {evaluator.device_index}" if gpu else "CPUs")


def make_pool(target: str, workers: str = "local", devices: str = "0", **options: Any) -> SharedPool:
    """The pool --workers names; ValueError for a bad value, a cluster that cannot serve the target, or Ray
    missing (with how to install it). options: the evaluators' (timeout_s, compile_timeout_s)."""
    address = ray_address(workers)
    if address is None:
        return SharedPool(evaluators(target, devices, **options), describe=_where)  # type: ignore[arg-type]
    try:
        from kernelevolve.eval.service import ray_pool
    except ImportError as e:
        raise ValueError(str(e)) from None
    ray_pool.connect(address or None)
    return ray_pool.RayPool(target, **options)
