"""Which traced operators become problems, as BackendBench selects them: computational operators only, no random
operators, no tensor creation, no views and no data movement (docs/aten.md, "Selection"); and each operator's
variants (in-place and out= forms the dispatcher shim maps onto the same kernel)."""

from __future__ import annotations

from typing import Any

import torch

# Data movement and bookkeeping: copies, layout changes, joins and splits, fills, sizes. Their "kernel" is a copy.
MANIPULATION = frozenset(
    """
    cat stack hstack vstack split split_with_sizes chunk unbind repeat repeat_interleave tile roll flip
    nonzero nonzero_static masked_select clone copy copy_ _to_copy to contiguous _copy_from _copy_from_and_resize
    constant_pad_nd pad reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d
    fill fill_ zero zero_ lift_fresh lift_fresh_copy detach_copy alias_copy resize_ resize_as_ set_
    expand_copy permute_copy transpose_copy view_copy slice_copy select_copy unsqueeze_copy squeeze_copy t_copy
    slice_scatter select_scatter diagonal_scatter as_strided_scatter index_copy _unsafe_view
    sym_size sym_stride sym_numel sym_storage_offset item _local_scalar_dense is_nonzero equal
    """.split()
)
# Creation: a new tensor from sizes and fills, not from the inputs' values.
CREATION = frozenset(
    """
    empty empty_like empty_strided new_empty new_empty_strided new_zeros new_ones new_full zeros zeros_like
    ones ones_like full full_like arange linspace logspace eye scalar_tensor tensor triu_indices tril_indices
    """.split()
)

# Outputs whose contents the operator leaves unspecified (workspaces, bookkeeping for the backward): no kernel can
# be checked against them.
UNSPECIFIED = frozenset(
    """
    _ctc_loss _ctc_loss_backward _embedding_bag _embedding_bag_forward_only _embedding_bag_backward
    _embedding_bag_dense_backward _embedding_bag_per_sample_weights_backward
    """.split()
)


def functional_name(name: str) -> str:
    """The functional form an in-place or out= overload belongs to ('aten::add_.Tensor' -> 'aten::add.Tensor',
    'aten::add.out' -> 'aten::add.Tensor' where that schema matches); the name itself when it has none."""
    ns, _, rest = name.partition("::")
    base, _, overload = rest.rpartition(".")
    if base.endswith("_") and not base.endswith("__"):
        fn = f"{ns}::{base[:-1]}.{overload}"
        if resolve(fn) is not None:
            return fn
    op = resolve(name)
    if op is not None and overload.endswith("out"):
        for other in getattr(torch.ops.aten, base).overloads():
            if other != overload and _out_variant(resolve(f"{ns}::{base}.{other}"), op):
                return f"{ns}::{base}.{other}"
    return name


def resolve(name: str) -> Any:
    """The OpOverload of 'aten::add.Tensor' (None where there is none)."""
    ns, _, rest = name.partition("::")
    base, _, overload = rest.rpartition(".")
    try:
        return getattr(getattr(getattr(torch.ops, ns), base), overload)
    except (AttributeError, RuntimeError):
        return None


def _arguments(op: Any) -> list[tuple[str, str]]:
    return [(a.name, str(a.type)) for a in op._schema.arguments if not a.is_out and a.alias_info is None]


def _out_variant(functional: Any, out: Any) -> bool:
    """Whether `out` is `functional` with out= tensors: the same inputs, every other argument an output."""
    if functional is None or out is None or functional._schema.is_mutable:
        return False
    ins = [(a.name, str(a.type)) for a in out._schema.arguments if not a.is_out]
    return ins == [(a.name, str(a.type)) for a in functional._schema.arguments] and any(
        a.is_out for a in out._schema.arguments
    )


def variants(name: str) -> list[str]:
    """The in-place and out= overloads that compute what `name` computes (the shim writes them onto its kernel)."""
    op = resolve(name)
    if op is None:
        return []
    ns, _, rest = name.partition("::")
    base, _, overload = rest.rpartition(".")
    found = []
    inplace = resolve(f"{ns}::{base}_.{overload}")
    if inplace is not None and [a.name for a in inplace._schema.arguments] == [a.name for a in op._schema.arguments]:
        found.append(f"{ns}::{base}_.{overload}")
    for other in getattr(torch.ops.aten, base).overloads():
        if other != overload and _out_variant(op, resolve(f"{ns}::{base}.{other}")):
            found.append(f"{ns}::{base}.{other}")
    return found


def excluded(name: str) -> str | None:
    """Why an operator is not a problem (None: it is): random, creation, a view, data movement, or unknown."""
    op = resolve(name)
    if op is None:
        return "not an ATen operator"
    base = name.split("::", 1)[-1].rsplit(".", 1)[0]
    if torch.Tag.nondeterministic_seeded in op.tags or "rand" in base or "dropout" in base or base == "bernoulli":
        return "random"
    if base in CREATION or base.removesuffix("_") in CREATION:
        return "tensor creation"
    if not any("Tensor" in str(a.type) for a in op._schema.arguments):
        return "tensor creation (no tensor input)"
    if any(r.alias_info is not None and not r.alias_info.is_write for r in op._schema.returns):
        return "view"
    if base in MANIPULATION or base.removesuffix("_") in MANIPULATION:
        return "data movement"
    if base in UNSPECIFIED:
        return "outputs with unspecified contents (workspaces)"
    return None


# Categories for the suite's README and for stratified sampling (the list); the first that matches wins.
CATEGORIES = (
    ("loss", ("loss", "cross_entropy", "binary_cross_entropy", "kl_div", "nll_")),
    ("normalisation", ("norm", "_batch_norm", "layer_norm", "group_norm")),
    ("GEMM-like", ("mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "convolution", "conv", "dot", "einsum")),
    ("pooling", ("pool",)),
    (
        "activation",
        (
            "relu",
            "gelu",
            "silu",
            "sigmoid",
            "tanh",
            "hardswish",
            "hardsigmoid",
            "elu",
            "softplus",
            "mish",
            "glu",
            "softmax",
            "threshold",
            "hardtanh",
            "leaky_relu",
            "prelu",
            "logit",
        ),
    ),
    (
        "indexing",
        (
            "index",
            "gather",
            "scatter",
            "embedding",
            "where",
            "masked",
            "take",
            "put",
            "select",
            "searchsorted",
            "bucketize",
            "upsample",
            "grid_sampler",
        ),
    ),
    (
        "reduction",
        (
            "sum",
            "mean",
            "prod",
            "amax",
            "amin",
            "max",
            "min",
            "var",
            "std",
            "norm",
            "all",
            "any",
            "argmax",
            "argmin",
            "cumsum",
            "cumprod",
            "logsumexp",
            "topk",
            "sort",
        ),
    ),
    (
        "transcendental",
        (
            "exp",
            "expm1",
            "log",
            "log1p",
            "log2",
            "sqrt",
            "rsqrt",
            "sin",
            "cos",
            "tan",
            "erf",
            "pow",
            "reciprocal",
            "atan",
            "asin",
            "acos",
            "sinh",
            "cosh",
            "lgamma",
            "digamma",
        ),
    ),
)


def category(name: str) -> str:
    """The operator's category by its name ('aten::rsqrt.default' -> 'transcendental'); element-wise arithmetic,
    comparison and the rest fall to 'element-wise'."""
    base = name.split("::", 1)[-1].rsplit(".", 1)[0].strip("_").removesuffix("_backward")
    for label, stems in CATEGORIES:
        if any(base == s or s in base.split("_") or (len(s) > 3 and s in base) for s in stems):
            return label
    return "element-wise"
