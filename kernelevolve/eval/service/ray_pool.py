"""The evaluation pool on a Ray cluster (`--workers ray`, `auto` or `ray://ADDRESS`): one actor per GPU, each
wrapping this machine's `Evaluator` (its extension cache, spare workers, sandbox and judge unchanged), placed by
Ray's GPU resources (`num_gpus=1`), so each GPU times one candidate at a time; on the cpu target actors reserve
CPUs. Extension builds run on CPU actors beside them (`prebuild`), so a GPU never waits on a compiler. Kernels,
problems and results travel in the call's payload and Ray's object store, never through a shared file system.

The actors are named (namespace `kernelevolve`): every process that asks for the same pool on one cluster shares
them, and Ray's per-actor queue schedules their evaluations one at a time. docs/cli.md ("Running on a cluster").
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    import ray
    from ray.exceptions import GetTimeoutError, ObjectLostError, RayActorError, RayTaskError, WorkerCrashedError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError as e:  # ray is optional: the extra installs it
    raise ImportError(
        f"--workers ray needs Ray ({e}): pip install 'kernelevolve[ray]' on this machine and every node"
    ) from None

from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.service.pool import DeviceLost, SharedPool
from kernelevolve.eval.wire import EvalOptions
from kernelevolve.platforms import get_platform
from kernelevolve.problem.problem import Problem, ProblemError, load_problem
from kernelevolve.result import EvalResult

NAMESPACE = "kernelevolve"
READY_S = 120.0  # how long a new actor may take to start (its spare workers import torch)
BUILDS_PER_NODE = 4  # extension builds at once on one node's build actor (the driver's MAX_PREBUILDS)
LOST = (RayActorError, WorkerCrashedError, ObjectLostError)

# Makes the evaluator inside an actor: Evaluator's signature (target, device_index=, prestart=, **options).
Factory = Callable[..., Any]


class _Host:
    """What an actor keeps on its own disk: the problems and candidates it was sent (keyed by their text)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="kernelevolve-actor-"))
        self._problems: dict[str, Problem] = {}

    def problem(self, name: str, text: str) -> Problem:
        key = hashlib.sha256(text.encode()).hexdigest()[:16]
        if key not in self._problems:
            path = self.folder / "problems" / key / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            self._problems[key] = load_problem(path)
        return self._problems[key]

    def candidate(self, text: str) -> Path:
        path = self.folder / "candidates" / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}-{time.monotonic_ns()}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


class EvalActor:
    """One device: an evaluator on the GPU Ray gave this actor (its physical index: the worker selects it, as
    `--devices` does on one machine, and NVML counts GPUs physically), or on CPUs."""

    def __init__(self, target: str, options: dict[str, Any], factory: Factory | None = None):
        ids = ray.get_gpu_ids()
        index = int(ids[0]) if ids else 0
        if get_platform(target).separate_device():
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        self.where = f"{socket.gethostname()} " + (f"GPU {index}" if ids else "CPUs") + f" (pid {os.getpid()})"
        self.node = ray.get_runtime_context().get_node_id()
        self.host = _Host()
        self.evaluator = (factory or Evaluator)(target, device_index=index, prestart=True, **options)

    def ready(self) -> tuple[str, str]:
        return self.where, self.node

    def evaluate(self, problem: tuple[str, str], candidate: str, options: EvalOptions) -> tuple[dict, float]:
        """The result as JSON and the seconds the evaluation took here (the rest of the call is Ray's)."""
        t0 = time.monotonic()
        path = self.host.candidate(candidate)
        try:
            result = self.evaluator.evaluate(self.host.problem(*problem), path, options)
        finally:
            path.unlink(missing_ok=True)
        return result.model_dump(mode="json"), time.monotonic() - t0


class BuildActor:
    """Builds candidates' extensions into its node's extension cache, where that node's GPU actors load them."""

    def __init__(self, target: str, options: dict[str, Any], factory: Factory | None = None):
        self.host = _Host()
        self.evaluator = (factory or Evaluator)(target, prestart=0, **options)

    def prebuild(self, problem: tuple[str, str], candidate: str) -> dict:
        path = self.host.candidate(candidate)
        try:
            return self.evaluator.prebuild(self.host.problem(*problem), path).model_dump(mode="json")
        finally:
            path.unlink(missing_ok=True)


def _payload(problem: Problem, candidate: Path) -> tuple[tuple[str, str], str]:
    path = Path(problem.path)
    return (path.name, path.read_text()), candidate.read_text()


class RayDevice:
    """This process's handle on one evaluation actor."""

    def __init__(self, actor: Any, platform: Any, where: str, node: str, name: str):
        self.actor, self.platform, self.where, self.node, self.name = actor, platform, where, node, name

    def evaluate(self, problem: Problem, candidate: Path, options: EvalOptions, /) -> EvalResult:
        t0 = time.monotonic()
        try:
            data, ran_s = ray.get(self.actor.evaluate.remote(*_payload(problem, candidate), options))
        except LOST as e:
            raise DeviceLost(type(e).__name__) from e
        except RayTaskError as e:  # the evaluator raised: a malformed problem stops the search as it does locally
            if isinstance(e.cause, ProblemError):
                raise ProblemError(str(e.cause)) from None
            raise
        result = EvalResult.model_validate(data)
        # Ray's part: the payload's trip and the wait behind other processes' evaluations on this actor.
        result.stages["ray_dispatch"] = round(max(0.0, time.monotonic() - t0 - ran_s), 4)
        return result

    def prebuild(self, problem: Problem, candidate: Path) -> EvalResult:  # the pool's builders do this
        raise NotImplementedError

    def close(self) -> None:
        try:
            ray.kill(self.actor)
        except Exception:  # noqa: BLE001 - gone already
            pass


def connect(address: str) -> None:
    """Join the cluster `address` names ("auto": the running one; "ray://HOST:PORT": through Ray Client; "local":
    start one here), unless this process has joined one."""
    if not ray.is_initialized():
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False)


class RayPool(SharedPool):
    """The shared pool over a cluster's evaluation actors. actors: how many (default: the cluster's GPUs on a GPU
    target, its nodes on the cpu target); num_gpus / num_cpus: what each reserves (default: one GPU on a GPU target,
    one CPU on the cpu target); name: the actors' names' stem, shared by every process that gives it."""

    def __init__(
        self,
        target: str,
        *,
        actors: int | None = None,
        num_gpus: float | None = None,
        num_cpus: float | None = None,
        name: str | None = None,
        factory: Factory | None = None,
        **options: Any,
    ):
        self.target = target
        gpu = get_platform(target).separate_device()
        self.num_gpus = (1 if gpu else 0) if num_gpus is None else num_gpus
        self.num_cpus = (0 if self.num_gpus else 1) if num_cpus is None else num_cpus
        self.name = name or f"kernelevolve-{target}"
        self.options, self.factory = options, factory
        count = actors or self._default_actors(gpu)
        devices = [self._start(f"{self.name}-{i}") for i in range(count)]
        self._ready(devices)
        self._builders: dict[str, Any] = {}
        super().__init__(devices, describe=lambda d: d.where, replace_device=self._replacement, builder=self._build)

    def _default_actors(self, gpu: bool) -> int:
        if not gpu:
            return max(1, sum(1 for n in ray.nodes() if n.get("Alive")))
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if not gpus:
            raise ValueError(
                f"the Ray cluster has no GPUs for the {self.target} target: start its nodes with their GPUs "
                "(`ray start ... --num-gpus N`), or use --target cpu"
            )
        return gpus

    def _start(self, name: str) -> Any:
        remote = ray.remote(EvalActor).options(
            name=name, get_if_exists=True, num_gpus=self.num_gpus, num_cpus=self.num_cpus, max_concurrency=1
        )
        return remote.remote(self.target, self.options, self.factory)

    def _ready(self, actors: list[Any]) -> None:
        """Each actor's place, once it has started: RayDevice handles replace the actor handles in place."""
        try:
            places = ray.get([a.ready.remote() for a in actors], timeout=READY_S)
        except GetTimeoutError:
            raise ValueError(
                f"the Ray cluster did not start {len(actors)} evaluation actor(s) in {READY_S:g} s, each with "
                f"{self.num_gpus:g} GPU and {self.num_cpus:g} CPU: too few free (see `ray status`)"
            ) from None
        platform = get_platform(self.target)
        for i, (where, node) in enumerate(places):
            actors[i] = RayDevice(actors[i], platform, where, node, f"{self.name}-{i}")

    def _replacement(self, lost: RayDevice) -> RayDevice | None:
        """A fresh actor under the lost one's name (or the live one another process has made meanwhile)."""
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            actor = self._start(lost.name)
            try:
                where, node = ray.get(actor.ready.remote(), timeout=max(1.0, deadline - time.monotonic()))
            except LOST:  # its name still held by the dead one
                time.sleep(0.5)
                continue
            except GetTimeoutError:
                break
            return RayDevice(actor, lost.platform, where, node, lost.name)
        print(f"[kernelevolve] no actor took {lost.name}'s place in {READY_S:g} s", file=sys.stderr)
        return None

    def _builder_on(self, node: str) -> Any:
        if node not in self._builders:
            remote = ray.remote(BuildActor).options(
                num_cpus=1,
                max_concurrency=BUILDS_PER_NODE,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=True),
            )
            self._builders[node] = remote.remote(self.target, self.options, self.factory)
        return self._builders[node]

    def _build(self, problem: Problem, candidate: Path) -> EvalResult:
        """The extensions built on a CPU actor on every node that has evaluation actors (whichever device takes
        the evaluation finds them in its node's cache)."""
        nodes = sorted({d.node for d in self.devices})
        payload = _payload(problem, candidate)
        results = ray.get([self._builder_on(n).prebuild.remote(*payload) for n in nodes])
        parsed = [EvalResult.model_validate(r) for r in results]
        return next((r for r in parsed if not r.correct), parsed[0])

    def close(self) -> None:
        super().close()
        for builder in self._builders.values():
            ray.kill(builder)
        self._builders = {}
