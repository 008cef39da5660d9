"""The one input builder: a problem's inputs for a shape case, from a seed and a distribution.

`get_inputs()` fixes shapes, dtypes and integer contents (indices, lengths); floating tensors are then
redrawn from the requested distribution so correctness is not checked on `torch.rand` alone.
"""

from __future__ import annotations

import copy
import types
from typing import Any

import torch
from torch.utils._pytree import tree_map

from kernelevolve.eval.rules import DISTRIBUTIONS as DESCRIBED
from kernelevolve.platforms import for_device
from kernelevolve.problem.problem import ProblemError

# Trials of a case take these in order (wrapping around); one outside the problem's domain is skipped
# and the next taken. "given" is get_inputs() as written; the rest redraw its floating tensors.
DISTRIBUTIONS = tuple(DESCRIBED)  # their order: eval/rules.py


def problem_dtype(module: types.ModuleType) -> torch.dtype:
    dtype = getattr(module, "DTYPE", torch.float32)
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ProblemError(f"{module.__file__}: DTYPE must be a floating torch dtype, got {dtype!r}")
    return dtype


def floats_redrawable(module: types.ModuleType) -> bool:
    """Whether the problem lets its floating inputs be redrawn (INPUT_DISTRIBUTIONS not "given" alone): their values
    then carry no invariant the layout needs, and the harness may write new ones into a set's own buffers."""
    return any(d != "given" for d in allowed_distributions(module))


def allowed_distributions(module: types.ModuleType) -> tuple[str, ...]:
    """The problem's INPUT_DISTRIBUTIONS (for inputs with invariants a redraw would break), else all."""
    allowed = getattr(module, "INPUT_DISTRIBUTIONS", None)
    if allowed is None:
        return DISTRIBUTIONS
    bad = [d for d in allowed if d not in DISTRIBUTIONS] if isinstance(allowed, (list, tuple)) else [allowed]
    if bad or not allowed:
        raise ProblemError(
            f"{module.__file__}: INPUT_DISTRIBUTIONS must be a non-empty list drawn from {', '.join(DISTRIBUTIONS)}"
        )
    return tuple(allowed)


def is_sorted(t: torch.Tensor) -> bool:
    """Sorted along its last dimension (bucket borders, offsets): a redraw keeps it so."""
    if t.dim() < 1 or t.shape[-1] < 2 or t.numel() == 0:
        return False
    first = t.reshape(-1, t.shape[-1])[0]  # random data fails on its first row: no full pass
    return bool((first[1:] >= first[:-1]).all()) and bool((t[..., 1:] >= t[..., :-1]).all())


def _redraw(t: torch.Tensor, distribution: str, gen: torch.Generator) -> torch.Tensor:
    """Same shape and dtype from another distribution; an input sorted along its last dimension (bucket
    borders, offsets) stays sorted."""
    x = _draw(t.shape, distribution, gen)
    if is_sorted(t):  # on the tensor's own device: get_inputs draws on the GPU there
        x = x.sort(dim=-1).values
    return x.to(t.dtype)


def _draw(shape: torch.Size, distribution: str, gen: torch.Generator) -> torch.Tensor:
    if distribution == "normal":
        x = torch.randn(shape, generator=gen, dtype=torch.float32, device=gen.device)
    elif distribution == "uniform_signed":
        x = torch.rand(shape, generator=gen, dtype=torch.float32, device=gen.device) * 2 - 1
    elif distribution == "heavy_tailed":
        # Student-t with 2 degrees of freedom: a few large values among many small ones.
        z = torch.randn(shape, generator=gen, dtype=torch.float32, device=gen.device)
        chi = torch.randn((2, *shape), generator=gen, dtype=torch.float32, device=gen.device).square().sum(0) / 2
        x = (z / chi.sqrt().clamp_min(1e-3)).clamp(-1e3, 1e3)
    elif distribution == "large":
        x = torch.randn(shape, generator=gen, dtype=torch.float32, device=gen.device) * 100
    else:
        raise ValueError(f"unknown input distribution {distribution!r}")
    return x


def out_of_memory(e: BaseException) -> bool:
    """A device or host allocation that failed (the host's allocator raises a plain RuntimeError)."""
    return isinstance(e, (torch.OutOfMemoryError, MemoryError)) or (
        isinstance(e, RuntimeError) and "can't allocate memory" in str(e)
    )


def call_get_inputs(module: types.ModuleType, seed: int, device: torch.device) -> list[Any]:
    """get_inputs() from `seed`. On a GPU its tensors are made there (factory calls run under the device as the
    default), and where that fails, on the host as written. Drawn on the host, every input set of every shape
    case would be generated there and copied over, which is slow for large inputs (docs/benchmarks/harness.md,
    the load stage)."""
    if for_device(device).separate_device():
        torch.manual_seed(seed)
        try:
            with torch.device(device):
                return _as_arguments(module, module.get_inputs())
        except torch.OutOfMemoryError:
            raise  # the sizes do not fit: the harness's limit (eval/worker/harness.py), not the problem's fault
        except Exception:  # noqa: BLE001 - host-only code in get_inputs: run it as written
            pass
    torch.manual_seed(seed)
    try:
        drawn = module.get_inputs()
    except Exception as e:  # noqa: BLE001
        if out_of_memory(e):
            raise

        raise ProblemError(f"{module.__file__}: get_inputs() raised {type(e).__name__}: {e}") from e
    return _as_arguments(module, drawn)


def _as_arguments(module: types.ModuleType, drawn: Any) -> list[Any]:
    """get_inputs()'s list (or tuple) of forward's positional arguments; anything else (a dict, whose keys `list`
    would take, a single tensor, whose rows it would) is a ProblemError that says what to return instead."""
    if isinstance(drawn, (list, tuple)):
        return list(drawn)
    hint = "a dict may be one of those arguments, passed whole: [{...}]" if isinstance(drawn, dict) else "e.g. [x]"
    raise ProblemError(
        f"{module.__file__}: get_inputs() returned a {type(drawn).__name__}: it must return a list of forward's "
        f"positional arguments ({hint}); docs/design.md, Problem file"
    )


def build_inputs(
    module: types.ModuleType, seed: int, distribution: str, dtype: torch.dtype, device: torch.device
) -> list[Any]:
    """Inputs for the currently bound case; floating tensors cast to the problem's DTYPE."""
    inputs = call_get_inputs(module, seed, device)
    # Redrawn floating inputs are drawn on the device itself, as get_inputs' own tensors are.
    gen = torch.Generator(device=device).manual_seed(seed ^ 0x5EED)

    def leaf(x: Any) -> Any:  # every tensor, however nested in lists, tuples or dicts
        if not isinstance(x, torch.Tensor):
            return x
        x = like = x.detach()
        fresh = False  # a tensor made here needs no copy; one from get_inputs() may be shared
        if x.is_floating_point():
            if distribution != "given":
                x, fresh = _redraw(x, distribution, gen), True
            fresh = fresh or x.dtype != dtype
            x = x.to(dtype)
        return in_layout(x.to(device).contiguous() if x.device != device else x if fresh else x.clone(), like)

    return list(tree_map(leaf, list(inputs)))


def in_layout(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """x's values in the layout get_inputs() gave `like` (its strides, gaps and storage offset), so a problem
    that checks a non-contiguous input keeps it through copies and redraws. Layouts a copy cannot keep (an
    element reached twice, negative strides) stay contiguous."""
    if x.stride() == like.stride() and x.storage_offset() == like.storage_offset():
        return x
    if like.is_contiguous() and not like.storage_offset():
        return x
    if any(s <= 0 and n > 1 for n, s in zip(like.shape, like.stride())) or like.numel() == 0:
        return x
    return laid_out(x, list(like.stride()), like.storage_offset())


def laid_out(x: torch.Tensor, stride: list[int], offset: int) -> torch.Tensor:
    """x's values in a storage of their own laid out with `stride` from `offset` (zeros in the gaps): the one
    builder of a non-contiguous input, here and for a traced call's arguments (aten/spec.py)."""
    extent = 1 + sum((n - 1) * s for n, s in zip(x.shape, stride)) if x.numel() else 0
    base = torch.zeros(offset + extent, dtype=x.dtype, device=x.device)
    return base.as_strided(x.shape, stride, offset).copy_(x)


def build_init_inputs(module: types.ModuleType) -> list[Any]:
    try:
        return list(module.get_init_inputs())
    except Exception as e:  # noqa: BLE001
        raise ProblemError(f"{module.__file__}: get_init_inputs() raised {type(e).__name__}: {e}") from e


def build_model(
    cls: type,
    init: list[Any],
    seed: int,
    dtype: torch.dtype,
    device: torch.device,
    reference: torch.nn.Module | None = None,
    reference_state: dict[str, Any] | None = None,
) -> torch.nn.Module:
    """A model in eval() mode built under `seed`. Given the reference (or its state dict, in another process),
    parameters are matched to it: the same seed, then its state dict copied wherever names and shapes match."""
    torch.manual_seed(seed)
    model = cls(*copy.deepcopy(init))
    if reference is not None:
        reference_state = reference.state_dict()
    if reference_state is not None and isinstance(model, torch.nn.Module):
        own = model.state_dict()
        shared = {k: v for k, v in reference_state.items() if k in own and own[k].shape == v.shape}
        if shared:
            model.load_state_dict(shared, strict=False)
    return _place(model, dtype, device)


def _place(model: torch.nn.Module, dtype: torch.dtype, device: torch.device) -> torch.nn.Module:
    if isinstance(model, torch.nn.Module):
        model = model.to(device=device)
        if any(p.is_floating_point() for p in model.parameters()) or any(
            b.is_floating_point() for b in model.buffers()
        ):
            model = model.to(dtype=dtype)
        model.eval()
    return model
