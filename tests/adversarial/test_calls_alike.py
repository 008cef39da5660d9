"""Issue 45, class 3: calls the candidate could tell apart. Timed, checked and unseen-input calls once came through
requests of their own kinds, so a stack walk or the request's kind told the candidate which calls were timed, and
a cache served them (41x on a matrix product that runs at 1.0x). Every call now comes through one request and one
path in the candidate's process, and a few timed calls, chosen by the judge, run on contents never shown before,
their outputs judged and their times held against the pass's (docs/harness.md, "Calls alike")."""

from __future__ import annotations

import pytest

from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.adversarial.test_adversarial import FAST_TIMING, HERE, assert_caught, contended_by_others, host_was_busy

MATMUL = HERE / "problems" / "matmul_small.py"
JAGGED = HERE / "problems" / "jagged_sum_small.py"


@pytest.mark.parametrize("candidate", ["tells_timed_calls_by_stack.py", "tells_timed_calls_by_request.py"])
def test_a_candidate_that_tells_timed_calls_apart_gains_nothing(cpu_evaluator, candidate):
    """Each computes where it believes a call is checked and answers from a cache where it believes the call is
    timed. Where it can no longer tell, it either computes everywhere (about 1x) or caches everywhere, and then a
    timed call on contents never shown misses and gives the cache away."""
    result = cpu_evaluator.evaluate(load_problem(MATMUL), HERE / "exploits" / candidate, **FAST_TIMING)
    if result.status is Status.OK and not contended_by_others(result):
        assert result.speedup is not None and result.speedup < 2.0, (result.speedup, result.review)
    elif result.status is not Status.OK and not host_was_busy(result):
        assert_caught(result, Status.REJECTED, "unseen-inputs check")


def test_stale_outputs_of_timed_calls_are_judged(cpu_evaluator):
    """Stale outputs on every timed call before the timing sets' contents rotate, right ones after: the last
    outputs and the unseen-inputs check see only right ones; a timed call the judge samples on new contents before
    the rotation sees a stale one."""
    result = cpu_evaluator.evaluate(load_problem(MATMUL), HERE / "exploits" / "stale_until_rotated.py", **FAST_TIMING)
    assert_caught(result, Status.INCORRECT, "timed call on contents it had not seen")


@pytest.mark.gpu
def test_on_a_gpu_a_cache_for_calls_told_apart_is_caught_by_the_judges_block():
    """On a GPU the candidate's process runs the timing pass, so a stack walk still tells timed calls there; the
    judge's block of calls on contents never shown (eval/worker/proof.py), computed honestly by this exploit,
    takes far longer than the cached calls reported."""
    from kernelevolve.eval.evaluator import Evaluator

    with Evaluator("cuda", timeout_s=300) as ev:
        result = ev.evaluate(
            load_problem(HERE / "problems" / "matmul_large.py"),
            HERE / "gpu_exploits" / "tells_timed_calls_by_stack.py",
            require_kernel=False,
            compile_baseline=False,
            **FAST_TIMING,
        )
    assert_caught(result, Status.REJECTED, "unseen-inputs check")


def test_a_jagged_cache_for_the_pass_alone_is_judged_by_its_sampled_calls(cpu_evaluator):
    """Jagged sets (input sets of differing shapes) once took no sampled calls: their contents cannot be rotated
    between buffers, so a cache keyed by address kept every timed call right. This one tells the timing pass by
    the order of requests, caches there alone, and lifts the unseen-inputs check's bound by sleeping on its calls on
    seen inputs (accepted at about 10x before). A sampled timed call now writes new floating contents into the
    iteration's own buffers, its layout (the integer offsets) kept: the cache answers it with a stale sum."""
    result = cpu_evaluator.evaluate(
        load_problem(JAGGED), HERE / "exploits" / "caches_jagged_in_the_pass.py", **FAST_TIMING
    )
    assert_caught(result, Status.INCORRECT, "timed call on contents it had not seen")
