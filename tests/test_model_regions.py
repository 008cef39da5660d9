"""Fused regions of a model's graph as problem files (kernelevolve/model/regions.py, docs/model.md "Regions"):
on a tiny transformer, a tiny DLRM-style model and a hand-written attention block, each region's problem loads,
passes the harness's reference check, and its Model, given the values the real model gave the region, gives what
the region gave in the model; a model that does not export says so in one line."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from kernelevolve.eval.probes import probe_source
from kernelevolve.model import regions as regions_module
from kernelevolve.model.graph_capture import CapturedGraph, capture
from kernelevolve.model.partition import kind, partition, worth_extracting
from kernelevolve.model.regions import KINDS, Region, RegionError, find_regions, last_skipped, outputs_mismatch
from kernelevolve.problem.problem import exec_problem, load_problem
from kernelevolve.result import Status


class Block(nn.Module):
    """Pre-norm transformer block: LayerNorm, Linear, attention through SDPA, GELU MLP."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Transformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


class DLRM(nn.Module):
    """Bottom MLP, three EmbeddingBag tables, pairwise dot-product interaction, top MLP."""

    def __init__(self, tables: int = 3, dim: int = 16) -> None:
        super().__init__()
        self.tables = nn.ModuleList(nn.EmbeddingBag(100, dim, mode="sum") for _ in range(tables))
        self.bottom = nn.Sequential(nn.Linear(8, dim), nn.ReLU())
        pairs = (tables + 1) * tables // 2
        self.top = nn.Sequential(nn.Linear(dim + pairs, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, dense: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        x = self.bottom(dense)
        z = torch.stack([x, *(t(indices[i], offsets[i]) for i, t in enumerate(self.tables))], 1)
        dots = torch.bmm(z, z.transpose(1, 2))
        i, j = torch.triu_indices(z.shape[1], z.shape[1], 1)
        return torch.sigmoid(self.top(torch.cat([x, dots[:, i, j]], 1)))


class RMSAttention(nn.Module):
    """RMSNorm from primitives, then two layers of causal attention as matmul-softmax-matmul sharing one mask built
    from arange (a constant: no region)."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d, bias=False) for _ in range(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        t = x.shape[1]
        future = torch.arange(t)[None, :] > torch.arange(t)[:, None]
        for qkv in self.qkv:
            q, k, v = qkv(h).chunk(3, dim=-1)
            h = torch.softmax((q @ k.transpose(-2, -1) * 0.25).masked_fill(future, float("-inf")), dim=-1) @ v
        return h


class Branchy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.relu() if x.sum() > 0 else x.neg()  # a Python branch on a tensor's value: no graph


def _transformer():
    torch.manual_seed(0)
    return Transformer().eval(), (torch.randn(2, 8, 32),)


def _dlrm():
    torch.manual_seed(0)
    indices = torch.randint(0, 100, (3, 12))
    offsets = torch.tensor([[0, 3, 6, 9]] * 3)
    return DLRM().eval(), (torch.randn(4, 8), indices, offsets)


def _rms_attention():
    torch.manual_seed(0)
    return RMSAttention().eval(), (torch.randn(2, 8, 16),)


MODELS = {"transformer": _transformer, "dlrm": _dlrm, "rms_attention": _rms_attention}


@pytest.fixture(scope="module")
def found() -> dict[str, tuple[nn.Module, tuple, list[Region]]]:
    out = {}
    for name, make in MODELS.items():
        model, args = make()
        out[name] = (model, args, find_regions(model, args, {}, "cpu"))
        assert last_skipped() == [], last_skipped()
    return out


@pytest.fixture(scope="module")
def graphs(found) -> dict[str, CapturedGraph]:
    """Each model's exported graph run on its inputs (every value: the regions' inputs and outputs as the model
    computed them), its output checked against the model's own."""
    out = {}
    for name, (model, args, _) in found.items():
        graph = capture(model, args)
        with torch.no_grad():
            assert torch.equal(graph.values[list(graph.graph.nodes)[-1]][0], model(*args))  # the graph is the model
        out[name] = graph
    return out


def _by_kind(regions: list[Region]) -> dict[str, list[Region]]:
    out: dict[str, list[Region]] = {}
    for r in regions:
        out.setdefault(r.kind, []).append(r)
    return out


def test_the_transformer_block_gives_epilogues_add_layernorm_and_attention_counted_per_block(found):
    _, _, regions = found["transformer"]
    kinds = _by_kind(regions)
    assert set(kinds) == {"gemm_epilogue", "normalization", "attention"}
    gelu = [r for r in kinds["gemm_epilogue"] if "aten::gelu.default" in r.ops]
    assert len(gelu) == 1 and gelu[0].ops == ["aten::addmm.default", "aten::gelu.default"]
    assert [r.ops for r in kinds["normalization"]] == [["aten::add.Tensor", "aten::native_layer_norm.default"]]
    assert [r.ops for r in kinds["attention"]] == [["aten::scaled_dot_product_attention.default"]]
    # Two identical blocks: one problem each, counted. The first block's last residual add is the second's add +
    # LayerNorm (three in all); the second's feeds the output, so it stays fc2's epilogue (once).
    counts = {tuple(r.ops): r.count for r in regions}
    assert counts == {
        ("aten::addmm.default", "aten::gelu.default"): 2,
        ("aten::add.Tensor", "aten::native_layer_norm.default"): 3,
        ("aten::scaled_dot_product_attention.default",): 2,
        ("aten::addmm.default", "aten::add.Tensor"): 1,
    }
    assert len({r.signature for r in regions}) == len(regions) == len({r.name for r in regions})


def test_the_dlrm_gives_one_embedding_problem_for_its_three_tables_and_mlp_epilogues(found):
    _, _, regions = found["dlrm"]
    kinds = _by_kind(regions)
    assert [(r.ops, r.count) for r in kinds["embedding"]] == [(["aten::_embedding_bag.default"], 3)]
    assert {tuple(r.ops) for r in kinds["gemm_epilogue"]} == {
        ("aten::addmm.default", "aten::relu.default"),
        ("aten::addmm.default", "aten::sigmoid.default"),
    }


def test_primitive_rmsnorm_and_matmul_softmax_matmul_are_found(found):
    _, _, regions = found["rms_attention"]
    kinds = _by_kind(regions)
    (norm,) = kinds["normalization"]
    assert {"aten::rsqrt.default", "aten::mean.dim", "aten::pow.Tensor_Scalar"} <= set(norm.ops)
    (attention,) = kinds["attention"]
    assert attention.count == 2 and attention.name == "attention_16"  # the mask is an input of both: one problem
    assert attention.ops == [
        "aten::bmm.default",
        "aten::mul.Tensor",
        "aten::where.self",  # masked_fill, decomposed
        "aten::_softmax.default",
    ]
    assert not any("aten::gt.Tensor" in r.ops for r in regions)  # the mask from arange is no region
    assert attention.source.count("torch.ops.aten.bmm.default(") == 2
    assert "torch.ops.aten.split_with_sizes.default(" in attention.source  # takes the q, k, v projection whole


def test_regions_are_well_formed(found):
    for _, _, regions in found.values():
        for r in regions:
            assert r.kind in KINDS and r.count >= 1 and r.time_ms > 0
            assert r.name.replace("_", "").isalnum() and r.name.islower()
            assert r.ops and all(op.startswith("aten::") for op in r.ops)
            assert len(r.ops) >= 2 or r.kind in ("attention", "embedding")


def _check_against_the_model(tmp_path, model: nn.Module, values: dict[str, torch.Tensor], region: Region) -> None:
    """The region's problem, loaded as any problem is, given the values the model's graph gave the region's first
    occurrence and the model's own weights, gives the region's outputs."""
    path = tmp_path / region.name / "problem.py"
    path.parent.mkdir()
    path.write_text(region.source)
    module = exec_problem(load_problem(path).path)
    problem_model = module.Model(*module.get_init_inputs()).eval()
    state = model.state_dict()
    with torch.no_grad():
        for attr, name in module.PARAMETER_NAMES.items():
            getattr(problem_model, attr).copy_(state[name])
        out = problem_model(*[values[n] for n in module.GRAPH_NODES["inputs"]])
    got = list(out) if isinstance(out, tuple) else [out]
    assert outputs_mismatch(got, [values[n] for n in module.GRAPH_NODES["outputs"]]) == "", region.name
    drawn = [module.get_inputs() for _ in range(2)]  # get_inputs rebuilds the real shapes and dtypes
    assert [tuple(x.shape) for x in drawn[0]] == [tuple(values[n].shape) for n in module.GRAPH_NODES["inputs"]]


@pytest.mark.parametrize("name", list(MODELS))
def test_each_problem_computes_what_its_region_computes_in_the_model(found, graphs, tmp_path, name):
    model, _, regions = found[name]
    values = {n.name: v for n, v in graphs[name].values.items()}
    for region in regions:
        _check_against_the_model(tmp_path, model, values, region)


def test_the_problems_pass_the_harness_reference_check(found, cpu_evaluator, tmp_path):
    """The problem against itself through the real evaluator, as check-problem's reference probe runs it: every
    transformer region, the DLRM's lookup (integer inputs, exact offsets) and the hand-written attention block."""
    regions = [
        *found["transformer"][2],
        *(r for r in found["dlrm"][2] if r.kind == "embedding"),
        *(r for r in found["rms_attention"][2] if r.kind == "attention"),
    ]
    assert len(regions) == 6
    for region in regions:
        path = tmp_path / f"{region.name}.py"
        path.write_text(region.source)
        candidate = tmp_path / f"{region.name}_reference.py"
        candidate.write_text(probe_source("reference", path))
        result = cpu_evaluator.evaluate(load_problem(path), candidate, trials=1, timed=False)
        assert result.status is Status.OK, (region.name, result.reason)


def test_the_problem_uses_the_model_weights_names(found):
    """Random weights give other outputs: the check above can fail when a weight is mapped wrongly."""
    model, args, regions = found["dlrm"]
    (embedding,) = [r for r in regions if r.kind == "embedding"]
    module = regions_module.problem_module(embedding.source)
    assert list(module.PARAMETER_NAMES.values()) == ["tables.0.weight"]
    drawn = module.Model()
    assert drawn.w0.shape == model.tables[0].weight.shape and not torch.equal(drawn.w0, model.tables[0].weight)


def test_a_model_that_does_not_export_says_so():
    with pytest.raises(RegionError, match="does not export with torch.export"):
        find_regions(Branchy(), (torch.randn(4),), {}, "cpu")


def test_bad_targets_and_non_modules_are_one_line_errors():
    with pytest.raises(RegionError, match="unknown target"):
        find_regions(Branchy(), (torch.randn(4),), {}, "tpu")
    with pytest.raises(RegionError, match="expected an nn.Module"):
        find_regions(lambda x: x, (torch.randn(4),), {}, "cpu")


def test_a_region_that_fails_to_extract_is_skipped_with_its_reason_and_the_rest_go_on(monkeypatch):
    model, args = _dlrm()
    real = regions_module._check_and_time

    def failing(source, code, graph, target):
        if "aten::sigmoid.default" in code.ops:
            raise RuntimeError("a region that will not build")
        return real(source, code, graph, target)

    monkeypatch.setattr(regions_module, "_check_and_time", failing)
    regions = find_regions(model, args, None, "cpu")
    assert [reason for _, reason in last_skipped()] == ["RuntimeError: a region that will not build"]
    assert regions and all("aten::sigmoid.default" not in r.ops for r in regions)


def test_single_operators_are_not_regions(graphs):
    graph = graphs["dlrm"]
    groups = partition(graph.graph, set(graph.weights))
    singles = [g for g in groups if not worth_extracting(g)]
    assert any(kind(g) == "gemm_epilogue" for g in singles)  # the interaction's bmm alone


class MixedDtypes(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x.to(torch.bfloat16) * y).relu()


def test_a_bfloat16_region_says_its_dtype_and_mixed_dtypes_are_skipped_with_the_reason():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.SiLU()).to(torch.bfloat16)
    (region,) = find_regions(model, (torch.randn(4, 16, dtype=torch.bfloat16),), {}, "cpu")
    assert region.kind == "gemm_epilogue" and region.ops[0] == "aten::addmm.default"
    assert "aten::sigmoid.default" in region.ops  # SiLU, decomposed (computed in float32 inside the region)
    assert regions_module.problem_module(region.source).DTYPE is torch.bfloat16
    args = (torch.randn(4, 8), torch.randn(4, 8, dtype=torch.bfloat16))
    assert find_regions(MixedDtypes(), args, {}, "cpu") == []
    ((_, reason),) = last_skipped()
    assert "several dtypes (bfloat16, float32)" in reason


@pytest.mark.gpu
def test_regions_of_a_model_on_the_gpu_are_timed_there():
    model, args = _transformer()
    model, args = model.cuda(), tuple(a.cuda() for a in args)
    regions = find_regions(model, args, {}, "cuda")
    assert last_skipped() == [] and {r.kind for r in regions} == {"gemm_epilogue", "normalization", "attention"}
    assert all(r.time_ms > 0 for r in regions)


class BothOrders(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.relu(x) + y, w + torch.relu(z)  # add's operands either way round


def test_commutative_operands_in_either_order_are_one_problem():
    regions = find_regions(BothOrders(), tuple(torch.randn(4, 8) for _ in range(4)), {}, "cpu")
    relu_add = [r for r in regions if r.ops == ["aten::relu.default", "aten::add.Tensor"]]
    assert [r.count for r in relu_add] == [2] and last_skipped() == []
