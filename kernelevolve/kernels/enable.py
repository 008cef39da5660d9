"""`kernelevolve.enable(KERNEL_DIR)`: a kernel directory's kernels registered for their ATen operators, so a model
runs them unmodified (docs/aten.md "Kernels in a model: enable()").

Every file is read and checked, every operator resolved in torch and every kernel loaded before anything is
registered: a bad directory registers nothing. Each operator (and its in-place and out= variants) gets one
`torch.library` impl for the proven device's dispatch key. It sends a call to the kernel proven on that call's
arguments (shape, dtype, layout of each tensor, value of everything else) and every other call to the kernel that
key had before, taken with `torch.library.get_kernel` (the documented way to call the original from an override).
While a kernel runs, every registered operator goes straight to ATen: a kernel that calls torch (or the same
operator) never comes back into itself.
"""

from __future__ import annotations

import contextlib
import linecache
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevolve.kernels import calls
from kernelevolve.kernels.entry import DEVICES, Entry, EntryError, read
from kernelevolve.platforms import for_device

_inside = threading.local()  # depth of kernelevolve kernels running on this thread
_serving = threading.local()  # .handles: the scoped handles whose kernels serve calls on this thread now
_active: list[Enabled] = []


class EnableError(Exception):
    """The directory cannot be enabled; nothing of it was registered. The message says what and how to fix it."""


@dataclass
class Proven:
    arguments: calls.Pattern
    inputs: int  # the leading schema arguments the kernel's forward takes positionally
    kernel: Callable[..., Any]
    keywords: dict[str, int] | None = None  # then one dict of these arguments (name -> schema position), if any

    def call(self, values: list[Any]) -> Any:
        """The kernel on a bound call's values, passed as the problem's harness passed them (write.py
        `convention`): positional values, then, for a generated problem, one dict of the keyword values."""
        if self.keywords is None:
            return self.kernel(*values[: self.inputs])
        return self.kernel(*values[: self.inputs], {k: values[i] for k, i in self.keywords.items()})


@dataclass
class Plan:
    """One operator ready to register: its overload, its proven cases, its variants and how each maps onto it."""

    entry: Entry
    op: Any  # torch OpOverload
    cases: list[Proven]
    variants: list[tuple[Any, str]] = field(default_factory=list)  # (OpOverload, "inplace" | "out")

    def lookup(self, values: list[Any]) -> Proven | None:
        key = calls.pattern(values)
        return next((p for p in self.cases if calls.fits(p.arguments, key)), None)


class Enabled:
    """A directory's kernels as registered: `disable()` lifts them (ATen serves every call again); as a context
    manager, they are lifted on leaving the block. A scoped handle's kernels serve calls only inside
    `with handle.serving():` on that thread, and are lifted when the handle is garbage-collected too."""

    def __init__(self, folder: Path, plans: list[Plan], library: Any, scoped: bool = False):
        self.folder = folder
        self.plans = plans
        self.scoped = scoped
        self._library = library

    @property
    def operators(self) -> list[str]:
        return [p.entry.operator for p in self.plans]

    def disable(self) -> None:
        if self in _active:
            _active.remove(self)
        if self._library is not None:
            self._library._destroy()
            self._library = None

    @contextlib.contextmanager
    def serving(self) -> Iterator[Enabled]:
        """A scoped handle's kernels serve this thread's calls inside the block (nested blocks are fine)."""
        handles = _serving.__dict__.setdefault("handles", [])
        handles.append(self)
        try:
            yield self
        finally:
            handles.remove(self)

    def __enter__(self) -> Enabled:
        return self

    def __exit__(self, *exc: object) -> None:
        self.disable()

    def __repr__(self) -> str:
        return f"<kernelevolve kernels from {self.folder}: {', '.join(self.operators) or 'none'}>"


def enable(kernel_dir: str | Path, scoped: bool = False) -> Enabled:
    """Register every kernel of `kernel_dir` for its ATen operator; EnableError (nothing registered) otherwise.
    scoped: the kernels serve calls only inside the handle's `serving()` block (kernelevolve.swap's models use
    this); such a handle is not lifted by `disable()` nor listed by `enabled()`, and may share operators."""
    import torch

    if not hasattr(torch.library, "get_kernel"):
        raise EnableError(
            f"torch {torch.__version__} has no torch.library.get_kernel, which enable needs: upgrade torch"
        )
    folder = Path(kernel_dir)
    plans = prepare(folder, scoped)
    return _register(folder, plans, scoped)


def disable(handle: Enabled | None = None) -> None:
    """Lift one enabled directory's kernels, or every one's."""
    for h in [handle] if handle is not None else list(_active):
        h.disable()


def enabled() -> list[Enabled]:
    return list(_active)


def prepare(folder: Path, scoped: bool = False) -> list[Plan]:
    """Read, check and load everything the directory needs, registering nothing. A scoped directory's operators
    may also be served by other directories (see `enable`)."""
    entries = read_entries(folder)
    taken = {} if scoped else {op: h.folder for h in _active for op in _names(h.plans)}
    plans = [_plan(e) for e in entries]
    for plan in plans:
        for name in _names([plan]):
            if name in taken:
                raise EnableError(
                    f"{plan.entry.path}: {name} is already enabled from {taken[name]}: disable that first"
                )
            taken[name] = plan.entry.path
    return plans


def read_entries(folder: Path) -> list[Entry]:
    """Every file of the directory read and checked for shape (never executed); EnableError for a missing,
    empty, foreign or corrupt directory."""
    if not folder.is_dir():
        raise EnableError(f"{folder}: no such kernel directory (write one with `kernelevolve export RUN --kernel-dir`)")
    entries = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.name == "__pycache__":
            continue
        if not path.is_file() or path.suffix != ".py":
            raise EnableError(
                f"{path}: not a kernel file (a kernel directory holds only exported .py files): move it out"
            )
        try:
            entries.append(read(path))
        except EntryError as e:
            raise EnableError(str(e)) from None
    if not entries:
        raise EnableError(f"{folder}: no kernel files in it (write them with `kernelevolve export RUN --kernel-dir`)")
    return entries


def _names(plans: list[Plan]) -> list[str]:
    return [op.name() for plan in plans for op in [plan.op, *(v for v, _ in plan.variants)]]


def _plan(entry: Entry) -> Plan:
    import torch

    where = entry.path
    op = _overload(entry.operator, where)
    if not for_device(torch.device(entry.device)).usable():
        raise EnableError(f"{where}: its kernels are for cuda and no CUDA device is present here; remove the file")
    key = DEVICES[entry.device]
    name = op.name()
    if torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"):
        raise EnableError(
            f"{where}: {name} decomposes into other operators above the device (CompositeImplicitAutograd), so a "
            f"{key} kernel would never be called; export a kernel for the operator it decomposes into"
        )
    if not torch._C._dispatch_has_computed_kernel_for_dispatch_key(name, key):
        raise EnableError(f"{where}: torch has no {key} kernel for {name} to fall back to; remove the file")
    variants = [(v, _variant_kind(op, v, where)) for v in (_overload(n, where) for n in entry.variants)]
    loaded = _load_kernels(entry)
    cases = [_proven(c, op, loaded[c["kernel"]], where) for c in entry.dispatch]
    return Plan(entry, op, cases, variants)


def _proven(case: dict[str, Any], op: Any, kernel: Callable[..., Any], where: Path | None) -> Proven:
    """A DISPATCH case checked against the operator's schema: its pattern covers every argument, and the kernel's
    positional and keyword arguments are arguments of the schema."""
    names = [a.name for a in op._schema.arguments]
    inputs = int(case.get("inputs", len(case["arguments"])))
    keywords = case.get("keywords")
    unknown = [k for k in keywords or [] if k not in names[inputs:]]
    if len(case["arguments"]) != len(names) or not 0 <= inputs <= len(names) or unknown:
        raise EnableError(
            f"{where}: a DISPATCH case does not match {op.name()}'s arguments ({', '.join(names)}); export it again"
        )
    positions = None if keywords is None else {k: names.index(k) for k in keywords}
    return Proven(case["arguments"], inputs, kernel, positions)


def _overload(operator: str, where: Path | None) -> Any:
    try:
        return calls.overload(operator)
    except calls.CallError as e:
        raise EnableError(f"{where}: {e}; export it with this torch, or remove the file") from None


def _variant_kind(op: Any, variant: Any, where: Path | None) -> str:
    """'inplace' (writes its first argument) or 'out' (one out= argument), with every other argument named as the
    operator's: what the shim needs to call the operator's kernel and write the result."""
    args = variant._schema.arguments
    outs = [a for a in args if a.is_out]
    writes_self = bool(args) and args[0].alias_info is not None and args[0].alias_info.is_write and not outs
    kind = "out" if len(outs) == 1 else "inplace" if writes_self else ""
    names = {a.name for a in args if not a.is_out}
    if not kind or not {a.name for a in op._schema.arguments} <= names:
        raise EnableError(
            f"{where}: {variant.name()} is neither the in-place nor the out= form of {op.name()}; remove it from "
            "ATEN_VARIANTS"
        )
    return kind


def _load_kernels(entry: Entry) -> dict[str, Callable[..., Any]]:
    """Each kernel source run as a module of its own and its ModelNew built (C++ and CUDA extensions compile
    here): a kernel that cannot load fails the directory before anything is registered."""
    out = {}
    for name, source in entry.kernels.items():
        try:
            module = source_module(
                f"kernelevolve_kernel_{entry.operator.replace('::', '_').replace('.', '_')}_{name}", source
            )
            kernel = module.ModelNew(*entry.init_inputs)
        except Exception as e:  # noqa: BLE001 - any failure of a kernel's own code is the directory's error
            raise EnableError(f"{entry.path}: kernel {name} does not load: {type(e).__name__}: {e}") from None
        if any(True for _ in kernel.parameters()) or any(True for _ in kernel.buffers()):
            raise EnableError(
                f"{entry.path}: kernel {name} has parameters; an operator's kernel takes all it needs as arguments"
            )
        out[name] = kernel
    return out


def source_module(name: str, source: str) -> types.ModuleType:
    """A kernel's source run as a module of its own, findable by inspect (Triton reads kernels through it)."""
    # Triton's compiler reads a kernel's source through inspect, which finds it in linecache under this name.
    filename = f"<kernelevolve kernel: {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def _register(folder: Path, plans: list[Plan], scoped: bool = False) -> Enabled:
    import torch

    library = torch.library.Library("aten", "IMPL")
    handle = Enabled(folder, plans, library, scoped)
    gate = _gate(weakref.ref(handle)) if scoped else None
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="(?s).*Overriding a previously registered kernel")
            for plan in plans:
                key = plan.entry.dispatch_key
                for op, kind in [(plan.op, ""), *plan.variants]:
                    original = torch.library.get_kernel(op, key)
                    library.impl(_impl_name(op), _impl(plan, op, kind, original, gate), key, with_keyset=True)
    except Exception as e:  # noqa: BLE001 - whatever torch refused, nothing stays registered
        library._destroy()
        raise EnableError(
            f"{folder}: torch refused a registration ({type(e).__name__}: {e}); nothing is enabled"
        ) from None
    if not scoped:
        _active.append(handle)
    return handle


def _gate(ref: weakref.ref[Enabled]) -> Callable[[], bool]:
    """Whether a scoped handle serves calls here now (a weak reference: the registered impl must not keep the
    handle, and so its library, alive)."""

    def open_() -> bool:
        return ref() in getattr(_serving, "handles", ())

    return open_


def _impl_name(op: Any) -> str:
    schema = op._schema
    base = schema.name.split("::", 1)[1]
    return f"{base}.{schema.overload_name}" if schema.overload_name else base


def _impl(plan: Plan, op: Any, kind: str, original: Any, gate: Callable[[], bool] | None) -> Callable[..., Any]:
    """The impl registered for `op`: the proven kernel where the call fits a case (and, scoped, inside the
    handle's block), else the original kernel."""
    schema = op._schema
    positions = [a.name for a in schema.arguments]
    # where each of the operator's arguments sits in this variant's (the identity for the operator itself)
    operand = [positions.index(a.name) for a in plan.op._schema.arguments]

    def fallback(keyset: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        return original.call_boxed(keyset, *calls.as_tensors(schema, list(args)), **kwargs)

    def impl(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_inside, "depth", 0) or (gate is not None and not gate()):
            return fallback(keyset, args, kwargs)
        try:
            bound = calls.bind(schema, args, kwargs)
        except calls.CallError:
            return fallback(keyset, args, kwargs)
        values = [bound[i] for i in operand] if kind else bound
        proven = plan.lookup(values)
        if proven is None:
            return fallback(keyset, args, kwargs)
        _inside.depth = getattr(_inside, "depth", 0) + 1
        try:
            result = proven.call(values)
            if not kind:
                return result
            target = bound[0] if kind == "inplace" else next(v for v, a in zip(bound, schema.arguments) if a.is_out)
            written = _write(target, result, kind)
            return fallback(keyset, args, kwargs) if written is None else written
        finally:
            _inside.depth -= 1

    return impl


def _write(target: Any, result: Any, kind: str) -> Any:
    """The shim's write of the operator's result into self (in-place) or out=; None where ATen's own rules
    (a resize, a dtype cast it may refuse) are better left to ATen, which then runs the call."""
    import torch

    if not isinstance(result, torch.Tensor) or result.dtype != target.dtype:
        return None
    if target.shape != result.shape:
        if kind == "inplace" or target.numel() != 0:
            return None
        target.resize_(result.shape)
    target.copy_(result)
    return target
