"""Fused regions of an exported ATen graph: which nodes belong together (docs/model.md, "Regions").

Each call is classed (pointwise, reduction, normalisation, glue such as views, GEMM, attention, embedding, other;
calls that depend on no input or weight are constants, never in a group). Pointwise, reduction, normalisation and
glue nodes join their producers' groups wherever that keeps the graph acyclic; a softmax group between two batched
matmuls becomes an attention block; a GEMM (or an embedding lookup) then takes the group it feeds when that group
is all pointwise (its epilogue); attention operators take the views feeding them, GEMMs and lookups the views of
their weights. Views that end a group are trimmed. Nothing here runs the graph.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
import torch.fx as fx

GLUE = "glue"
POINTWISE = "pointwise"
REDUCTION = "reduction"
NORMALIZATION = "normalization"
GEMM = "gemm"
ATTENTION = "attention"
EMBEDDING = "embedding"
OTHER = "other"
FUSIBLE = (GLUE, POINTWISE, REDUCTION, NORMALIZATION)
ANCHORS = (GEMM, ATTENTION, EMBEDDING)

_GLUE_OPS = {
    "view", "_unsafe_view", "reshape", "_reshape_alias", "permute", "transpose", "t", "expand", "unsqueeze",
    "squeeze", "clone", "alias", "slice", "select", "split", "split_with_sizes", "unbind", "contiguous", "detach",
    "unflatten", "flatten", "as_strided", "lift_fresh_copy",
}  # fmt: skip
_REDUCTION_OPS = {
    "sum", "mean", "amax", "amin", "max", "min", "var", "var_mean", "std", "std_mean", "prod", "_softmax",
    "_log_softmax", "softmax", "log_softmax", "_safe_softmax", "any", "all", "logsumexp", "linalg_vector_norm",
    "norm", "argmax", "argmin",
}  # fmt: skip
_NORMALIZATION_OPS = {
    "native_layer_norm", "layer_norm", "native_group_norm", "group_norm", "native_batch_norm", "batch_norm",
    "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "_native_batch_norm_legit_functional",
    "rms_norm", "_fused_rms_norm",
}  # fmt: skip
_GEMM_OPS = {"mm", "addmm", "bmm", "baddbmm", "matmul", "convolution"}
_ATTENTION_OPS = {
    "scaled_dot_product_attention", "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_cudnn_attention",
}  # fmt: skip
_EMBEDDING_OPS = {"embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only"}
_POINTWISE_EXTRA = {"_to_copy", "where", "masked_fill", "clamp", "clamp_min", "clamp_max"}
_SOFTMAX_OPS = {"_softmax", "softmax", "_safe_softmax"}
_BATCHED_GEMM = {"bmm", "matmul", "baddbmm"}
PRESERVED = _ATTENTION_OPS  # kept whole by the decomposition (graph_capture), so an attention block stays one call


def op_base(node: fx.Node) -> str:
    """aten.add.Tensor -> 'add'; '' for what is not an ATen overload (getitem)."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return target._schema.name.split("::", 1)[-1]
    return ""


def classify(node: fx.Node) -> str:
    """The node's class for fusion: one of FUSIBLE, ANCHORS or OTHER."""
    if node.op != "call_function":
        return OTHER
    if node.target is operator.getitem:
        return GLUE
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return OTHER
    base = op_base(node)
    if torch.Tag.nondeterministic_seeded in target.tags and not _without_dropout(node, base):
        return OTHER  # random: a problem could not reproduce it
    for names, cls in (
        (_GLUE_OPS, GLUE),
        (_NORMALIZATION_OPS, NORMALIZATION),
        (_REDUCTION_OPS, REDUCTION),
        (_GEMM_OPS, GEMM),
        (_ATTENTION_OPS, ATTENTION),
        (_EMBEDDING_OPS, EMBEDDING),
    ):
        if base in names:
            return cls
    has_tensor_input = any(isinstance(a, fx.Node) for a in node.all_input_nodes)
    if has_tensor_input and (torch.Tag.pointwise in target.tags or base in _POINTWISE_EXTRA):
        return POINTWISE
    return OTHER


def _without_dropout(node: fx.Node, base: str) -> bool:
    """An attention call whose dropout probability is 0 (tagged random for the dropout it can do)."""
    if base not in _ATTENTION_OPS:
        return False
    names = [a.name for a in node.target._schema.arguments]
    if "dropout_p" not in names:
        return True
    i = names.index("dropout_p")
    return node.kwargs.get("dropout_p", node.args[i] if len(node.args) > i else 0.0) == 0.0


@dataclass
class Group:
    """Nodes of one region, in graph order, and whether it was recognised as an attention block."""

    nodes: list[fx.Node]
    attention: bool = False


class _Partition:
    """Groups as sets of nodes, merged only where the graph of groups stays acyclic."""

    def __init__(self, graph: fx.Graph, weights: set[fx.Node]) -> None:
        self.weights = weights
        self.nodes = list(graph.nodes)
        self.index = {n: i for i, n in enumerate(self.nodes)}
        constant = _constants(self.nodes)
        self.cls = {n: OTHER if n in constant else classify(n) for n in self.nodes}
        self.group_of: dict[fx.Node, int] = {}
        self.members: dict[int, set[fx.Node]] = {}
        self.attention: set[int] = set()
        self.next_id = 0

    def new(self, node: fx.Node) -> int:
        gid = self.next_id
        self.next_id += 1
        self.members[gid] = {node}
        self.group_of[node] = gid
        return gid

    def acyclic(self, nodes: set[fx.Node]) -> bool:
        """No path leaves `nodes` and comes back (such a path's nodes all come before the last member)."""
        hi = max(self.index[n] for n in nodes)
        stack = [u for n in nodes for u in n.users if u not in nodes and self.index[u] < hi]
        seen: set[fx.Node] = set()
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            for u in x.users:
                if u in nodes:
                    return False
                if self.index[u] < hi:
                    stack.append(u)
        return True

    def merge(self, gids: list[int]) -> int | None:
        """Merge the groups into the first when acyclic; the merged id, or None (nothing changed)."""
        gids = list(dict.fromkeys(gids))
        union = set().union(*(self.members[g] for g in gids))
        if len(gids) > 1 and not self.acyclic(union):
            return None
        keep = gids[0]
        for g in gids[1:]:
            for n in self.members.pop(g):
                self.group_of[n] = keep
            if g in self.attention:
                self.attention.add(keep)
        self.members[keep] = union
        return keep

    def merge_or_keep(self, gids: list[int]) -> int:
        """The merged group's id, or the first's when merging would close a cycle."""
        merged = self.merge(gids)
        return gids[0] if merged is None else merged

    def classes(self, gid: int) -> set[str]:
        return {self.cls[n] for n in self.members[gid]}

    def glue_only(self, gid: int) -> bool:
        return self.classes(gid) == {GLUE}


def _constants(nodes: list[fx.Node]) -> set[fx.Node]:
    """Calls that depend on no input and no weight (a causal mask built from arange): the same for every
    batch, work for constant folding rather than a kernel, and kept out of regions (their values become the
    regions' inputs, so the regions that read them stay equal)."""
    constant: set[fx.Node] = set()
    for n in nodes:
        if n.op == "call_function" and all(a in constant for a in n.all_input_nodes):
            constant.add(n)
    return constant


def _trim_trailing_glue(nodes: list[fx.Node]) -> list[fx.Node]:
    """Views at a group's end that only reshape its outputs for what comes next: left out, so that regions
    differing only in how their result is viewed afterwards are one problem (getitems stay: the operator's tuple is
    no tensor)."""
    inside = set(nodes)
    trimmed = True
    while trimmed:
        trimmed = False
        for n in [n for n in nodes if n in inside]:
            if classify(n) == GLUE and n.target is not operator.getitem and not any(u in inside for u in n.users):
                if any(a in inside for a in n.all_input_nodes) and len(inside) > 1:
                    inside.discard(n)
                    trimmed = True
    return [n for n in nodes if n in inside]


def _fuse_fusible(p: _Partition) -> None:
    """Pointwise, reduction, normalisation and glue nodes join their producers' fusible groups."""
    for node in p.nodes:
        if p.cls[node] not in FUSIBLE:
            continue
        gid = p.new(node)
        producers = [p.group_of[a] for a in node.all_input_nodes if p.cls[a] in FUSIBLE and a in p.group_of]
        for g in dict.fromkeys(producers):
            if g != gid and g in p.members:
                gid = p.merge_or_keep([gid, g])


def _feeding_glue(p: _Partition, gid: int, weights_only: bool) -> list[int]:
    """Glue-only groups whose every use is in group `gid` (a weight's transpose, the views of q, k and v); with
    weights_only, only those that view weights (a view that picks one table of an input would make each lookup a
    problem of its own)."""
    target = p.members[gid]
    out = []
    for g in dict.fromkeys(p.group_of.get(a) for n in target for a in n.all_input_nodes):
        if g is None or g == gid or not p.glue_only(g):
            continue
        members = p.members[g]
        if not all(u in members or u in target for m in members for u in m.users):
            continue
        sources = {x for m in members for x in m.all_input_nodes if x not in members}
        if not weights_only or sources <= p.weights:
            out.append(g)
    return out


def _consumer_groups(p: _Partition, gid: int) -> set[int | None]:
    return {p.group_of.get(u) for n in p.members[gid] for u in n.users if u not in p.members[gid]}


def _take_getitems(p: _Partition, gid: int, node: fx.Node) -> None:
    """A multi-output operator's getitems move into its group (the groups they fed keep the rest): a region's
    outputs are then tensors, never the operator's tuple."""
    for u in list(node.users):
        if u.target is not operator.getitem or p.group_of.get(u) in (None, gid):
            continue
        old = p.group_of[u]
        p.members[old].discard(u)
        if not p.members[old]:
            del p.members[old]
        p.members[gid].add(u)
        p.group_of[u] = gid


def _attention_blocks(p: _Partition) -> None:
    """A softmax group fed by a batched matmul and feeding one: matmul-softmax-matmul, one attention block."""
    for gid in list(p.members):
        if gid not in p.members or not any(op_base(n) in _SOFTMAX_OPS for n in p.members[gid]):
            continue
        inside = p.members[gid]
        first = [a for n in inside for a in n.all_input_nodes if a not in inside and op_base(a) in _BATCHED_GEMM]
        second = [u for n in inside for u in n.users if u not in inside and op_base(u) in _BATCHED_GEMM]
        if not first or not second or any(n in p.group_of for n in [*first, *second]):
            continue
        if not p.acyclic(inside | set(first) | set(second)):
            continue
        merged = p.merge([gid, *(p.new(n) for n in dict.fromkeys([*first, *second]))])
        assert merged is not None  # checked acyclic above
        p.attention.add(merged)
        p.merge_or_keep([merged, *_feeding_glue(p, merged, weights_only=False)])


def _anchor(p: _Partition, node: fx.Node) -> None:
    """A GEMM, attention or embedding operator: its own group with the glue feeding it, and its epilogue (an
    all-pointwise group it alone feeds) where it has one."""
    gid = p.new(node)
    gid = p.merge_or_keep([gid, *_feeding_glue(p, gid, weights_only=p.cls[node] != ATTENTION)])
    _take_getitems(p, gid, node)
    if p.cls[node] == ATTENTION:
        return
    consumers = _consumer_groups(p, gid)
    if len(consumers) != 1 or None in consumers:
        return
    (g,) = consumers
    classes = p.classes(g)
    if POINTWISE in classes and classes <= {POINTWISE, GLUE}:
        p.merge_or_keep([gid, g])


def partition(graph: fx.Graph, weights: set[fx.Node]) -> list[Group]:
    """The graph's groups (every one, worth extracting or not), each in graph order, in the order they start;
    `weights` are the placeholders that hold parameters, buffers and constants."""
    p = _Partition(graph, weights)
    _fuse_fusible(p)
    _attention_blocks(p)
    for node in p.nodes:
        if p.cls[node] in ANCHORS and node not in p.group_of:
            _anchor(p, node)
    groups = [
        Group(_trim_trailing_glue(sorted(members, key=p.index.__getitem__)), attention=gid in p.attention)
        for gid, members in p.members.items()
    ]
    return sorted(groups, key=lambda g: p.index[g.nodes[0]])


def kind(group: Group) -> str:
    """pointwise, reduction, normalization, gemm_epilogue, attention or embedding."""
    classes = {classify(n) for n in group.nodes}
    bases = {op_base(n) for n in group.nodes}
    if group.attention or ATTENTION in classes:
        return "attention"
    if EMBEDDING in classes:
        return "embedding"
    if GEMM in classes:
        return "gemm_epilogue"
    if NORMALIZATION in classes or (REDUCTION in classes and bases & {"rsqrt", "sqrt"}):
        return "normalization"  # RMSNorm and LayerNorm built from primitives too
    if REDUCTION in classes:
        return "reduction"
    return "pointwise"


def compute_nodes(group: Group) -> list[fx.Node]:
    """The group's operators that compute (views, getitems and other glue aside)."""
    return [n for n in group.nodes if classify(n) != GLUE]


def worth_extracting(group: Group) -> bool:
    """At least two computing operators, or an attention block or embedding lookup (single operators are the
    ATen suite's job)."""
    return kind(group) in ("attention", "embedding") or len(compute_nodes(group)) >= 2
