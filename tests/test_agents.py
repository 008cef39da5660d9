"""The memory agent, deep search over the knowledge base, and what they put in the prompt."""

from __future__ import annotations

import random

import pytest

from kernelevolve.agents import memory
from kernelevolve.agents.lessons import signature, similarity
from kernelevolve.agents.retrieval import KnowledgeBase, parse_index
from kernelevolve.llm.registry import Ensemble
from kernelevolve.operators.universal import ParentContext, UniversalOperator
from kernelevolve.platforms import get_platform
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import CaseResult, EvalResult, Status
from tests.conftest import EXAMPLES, FIXTURES


def _result(status: Status, reason: str = "", cases=(), log: str = "", speedup=None) -> EvalResult:
    r = EvalResult(status=status, correct=status is Status.OK, reason=reason, cases=list(cases), log_tail=log)
    r = r.finalize()
    if speedup is not None:
        r.speedup = r.fitness = speedup
    return r


def test_compile_error_is_classified_with_advice():
    a = memory.analyse(
        1,
        _result(
            Status.COMPILE_ERROR,
            "loading the candidate raised CompilationError",
            log="triton.compiler.errors.CompilationError: at 12:8: arange's range must be a power of 2",
        ),
    )
    assert a.error_class == "triton_compile" and a.bottleneck == "correctness"
    assert "power-of-two" in a.advice[0]
    a = memory.analyse(
        2,
        _result(
            Status.RUNTIME_ERROR, "forward raised RuntimeError: CUDA error: an illegal memory access was encountered"
        ),
    )
    assert a.error_class == "illegal_memory" and "mask every load and store" in a.advice[0]
    a = memory.analyse(3, _result(Status.CRASHED, "the worker was killed by SIGSEGV during correctness case 0"))
    assert a.error_class == "segfault"


def test_mismatch_pattern_names_boundaries_and_distributions():
    cases = [
        CaseResult(shape={"ROWS": 4096, "HIDDEN": 4096}, correct=True, max_abs_err=1e-7),
        CaseResult(
            shape={"ROWS": 1024, "HIDDEN": 3000},
            correct=False,
            max_abs_err=2.3,
            reason="given inputs: 3060241 of 3072000 elements outside atol",
        ),
    ]
    a = memory.analyse(1, _result(Status.INCORRECT, "case 1: ...", cases))
    assert "1 of 2 shape cases fail" in a.mismatch and "non-power-of-two" in a.mismatch
    assert any("mask loads and stores" in x for x in a.advice)
    cases = [
        CaseResult(
            shape={"BATCH": 64},
            correct=False,
            max_abs_err=float("nan"),
            reason="large inputs: NaN in 3146569 places where the reference has none",
        )
    ]
    a = memory.analyse(2, _result(Status.INCORRECT, "x", cases))
    assert "NaN/Inf" in a.mismatch and "fails only on large inputs" in a.mismatch
    assert any("numerically stable" in x for x in a.advice)


def test_slow_but_correct_node_names_launch_bound_and_slow_shapes():
    cases = [
        CaseResult(shape={"N": 2048}, correct=True, t_candidate_ms=0.009, t_eager_ms=0.01, speedup=1.1),
        CaseResult(shape={"N": 1000}, correct=True, t_candidate_ms=0.012, t_eager_ms=0.01, speedup=0.83),
    ]
    a = memory.analyse(1, _result(Status.OK, cases=cases, speedup=0.95))
    assert a.bottleneck == "launch" and "correct, speedup 0.950" in a.summary
    assert any("slower than PyTorch on N=1000" in x for x in a.advice)


def test_roofline_position_from_the_harness():
    cases = [
        CaseResult(
            shape={"N": 4096}, correct=True, t_candidate_ms=0.040, t_roofline_ms=0.030, speedup=1.5, min_bytes=134217728
        )
    ]
    a = memory.analyse(1, _result(Status.OK, cases=cases, speedup=1.5))
    assert a.roofline["fraction_of_roofline"] == pytest.approx(0.75) and a.bottleneck == "memory"
    assert "75% of roofline" in a.summary and any("near the memory roofline" in x for x in a.advice)
    a = memory.analyse(2, _result(Status.OK, cases=[CaseResult(shape={}, correct=True, t_candidate_ms=1.0)]))
    assert a.roofline is None  # the cpu target records no roofline time


def test_refine_prompt_carries_the_failed_strategy_note():
    history = [
        {"id": 5, "strategy": "Unrolled the inner loop by 4.", "fitness": 1.1, "parent_fitness": 1.2},
        {"id": 3, "strategy": "Fused the residual add into the kernel.", "fitness": 1.2, "parent_fitness": 0.9},
    ]
    failed = memory.failed_strategies(history)
    assert failed == ["Unrolled the inner loop by 4."]
    analysis = memory.analyse(
        5, _result(Status.OK, cases=[CaseResult(shape={}, correct=True, t_candidate_ms=1.0, speedup=1.1)], speedup=1.1)
    )
    directives = memory.directives(analysis, failed)
    op = UniversalOperator(
        Ensemble([(object(), 1.0)], random.Random(0)), load_problem(FIXTURES / "kb_relu.py"), get_platform("cuda")
    )
    _, user = op.messages(
        ParentContext(5, "llm", "class ModelNew: ...", None),
        directives=directives,
        knowledge=["### hardware/nvidia/hopper/optimization.md: TMA\n\nUse TMA for tiles."],
    )
    assert "do not try again: Unrolled the inner loop by 4." in user.content
    assert "Use TMA for tiles." in user.content and "Diagnosis of the current kernel" in user.content


def test_strategy_is_the_prose_before_the_code():
    assert memory.strategy_of("Process two rows per program.\n```python\nx\n```") == "Process two rows per program."
    assert memory.strategy_of("Swap the loop.\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE") == "Swap the loop."


def test_index_table_parsing(tmp_path):
    text = (
        "| path | platform | arch | bottleneck | phase | summary |\n|---|---|---|---|---|---|\n"
        "| `a.md` | cuda | hopper | memory | refine | TMA |\n| b.md | cpu | x86 | any | any | AVX |\n"
    )
    entries = parse_index(text)
    assert [e.path for e in entries] == ["a.md", "b.md"] and entries[0].arch == "hopper"
    with pytest.raises(ValueError, match="columns"):
        parse_index("| path | summary |\n|---|---|\n| a | b |\n")


@pytest.fixture(scope="module")
def kb():
    return KnowledgeBase()


def test_hopper_memory_bound_query_returns_hopper_documents(kb):
    snippets = kb.search(
        "memory-bound kernel bandwidth TMA shared memory L2 tiles", platform="cuda", arch="hopper", bottleneck="memory"
    )
    assert snippets and "hopper" in snippets[0].path
    assert not any("x86" in s.path or "cdna3" in s.path or "ampere" in s.path for s in snippets)


def test_cpu_query_returns_x86_documents(kb):
    snippets = kb.search("vectorise the inner loop AVX-512 cache blocking OpenMP", platform="cpu")
    assert snippets and any("x86" in s.path for s in snippets)
    assert not any("hopper" in s.path or "cdna3" in s.path for s in snippets)


def test_snippets_fit_the_budget(kb):
    snippets = kb.search("softmax numerics overflow", platform="cuda", budget_tokens=300)
    assert sum(len(s.text) for s in snippets) // 4 <= 300


def test_problem_signatures_find_similar_problems():
    softmax = signature((EXAMPLES / "softmax" / "problem.py").read_text())
    transpose = signature((FIXTURES / "transpose.py").read_text())
    variant = (
        (FIXTURES / "transpose.py")
        .read_text()
        .replace('SHAPE_CASES = [{"N": 2048}, {"N": 1000}]', 'SHAPE_CASES = [{"N": 512}]')
    )
    assert similarity(transpose, signature(variant)) == 1.0
    assert similarity(softmax, transpose) < 0.5
