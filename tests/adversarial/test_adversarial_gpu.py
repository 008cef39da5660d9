"""The adversarial suite on a CUDA GPU (run on the device; skipped where there is none): every CPU exploit is
caught there too, with the device's poisoned allocator, and so are the classes only a GPU can show (side
streams, L2 persistence, a content cache only the roofline exposes); the honest Triton and PyTorch-level
kernels are accepted with every GPU check run. Outcomes are recorded in docs/benchmarks/harness.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.wire import GPU_JUDGE_ENV, gpu_judge_split
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.adversarial.test_adversarial import EXPLOITS, FAST_TIMING, HERE, HONEST, IN_PROCESS_EXPLOITS, RELU, SOFTMAX

pytestmark = pytest.mark.gpu

RELU_LARGE = HERE / "problems" / "relu_large.py"
GPU_EXPLOITS = [
    ("side_stream.py", RELU, Status.REJECTED, "host-clock check"),
    ("l2_persistence.py", RELU, Status.REJECTED, "l2-persistence check"),
]
GPU_CHECKS = {"roofline", "host_clock", "l2_persistence"}
SPLIT = gpu_judge_split()  # the candidate in a process of its own (eval/worker/host.py), unless asked otherwise
# With the split, an output crosses to the judge as a copy made on the call's stream: work left on a side stream
# is not in it, and the copy is wrong before the host clock is consulted.
SPLIT_CATCHES = {"side_stream.py": (Status.INCORRECT, "timing-outputs check")}


@pytest.fixture(scope="module")
def cuda_evaluator():
    with Evaluator("cuda", timeout_s=300, prestart=True) as ev:
        yield ev


def _evaluate(ev: Evaluator, problem: Path, candidate: Path, policy: bool | None):
    return ev.evaluate(
        load_problem(problem), candidate, require_kernel=bool(policy), compile_baseline=False, **FAST_TIMING
    )


@pytest.mark.parametrize("candidate,problem,status,why", GPU_EXPLOITS, ids=[e[0] for e in GPU_EXPLOITS])
def test_gpu_exploit_is_caught(cuda_evaluator, candidate, problem, status, why):
    result = _evaluate(cuda_evaluator, problem, HERE / "gpu_exploits" / candidate, False)
    times = [
        {k: getattr(c, k) for k in ("t_candidate_ms", "t_eager_ms", "t_roofline_ms", "t_candidate_tail_ms")}
        for c in result.cases
    ]
    print(candidate, result.status.value, result.reason, times)  # shown with -rA: how near the checks' bounds it came
    if SPLIT and candidate in SPLIT_CATCHES:  # its output crosses to the judge before the side stream has finished
        status, why = SPLIT_CATCHES[candidate]
    assert result.status is status, (result.reason, times, result.log_tail)
    assert why in result.reason, result.reason
    assert not result.correct and result.fitness == 0


CAUGHT = EXPLOITS + ([] if SPLIT else IN_PROCESS_EXPLOITS)
# On a GPU a call of a few microseconds is within the unseen-inputs check's slack, so what a cache gains there is
# shown where the calls are real work.
ON_CUDA = {"caches_jagged_by_pointer.py": HERE / "problems" / "jagged_sum_large.py"}


@pytest.mark.parametrize("candidate,problem,policy,status,why", CAUGHT, ids=[e[0] for e in CAUGHT])
def test_cpu_exploit_is_caught_on_cuda(cuda_evaluator, candidate, problem, policy, status, why):
    result = _evaluate(cuda_evaluator, ON_CUDA.get(candidate, problem), HERE / "exploits" / candidate, policy)
    print(
        candidate,
        result.status.value,
        result.reason,
        [(c.timing.candidate.median_ms, c.timing.candidate.unseen_ms) for c in result.cases],
    )
    assert result.status is status, (result.reason, result.log_tail)
    assert why in result.reason, result.reason


@pytest.mark.skipif(not SPLIT, reason=f"the candidate shares the judge's process ({GPU_JUDGE_ENV} is not split)")
@pytest.mark.parametrize("candidate", [e[0] for e in IN_PROCESS_EXPLOITS] + ["scales_timer_samples.py"])
def test_what_reaches_for_the_judge_finds_nothing_of_it_on_cuda(cuda_evaluator, candidate):
    """With the candidate in a process of its own, the reference outputs, the problem's private module and the
    judge's timer are elsewhere: each of these honest kernels with a forgery attached is what its kernel is."""
    problem = {e[0]: e[1] for e in IN_PROCESS_EXPLOITS}.get(candidate, RELU)
    result = _evaluate(cuda_evaluator, problem, HERE / "exploits" / candidate, None)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.speedup is not None and result.speedup < 2.5, result.speedup


# What the candidate's process can forge on a GPU, and the judge's check that catches it: (the candidate, the
# problem, what the rejection says with the split; with it off there is nothing to forge, and the kernel is measured
# as what it is, at most the last figure's speedup).
#   forges_device_times: divides its reported median by three; the judge's clock over a block of calls on
#     contents never shown gives it away.
#   slows_reference_in_its_process: the reference timed beside it runs slower than in the judge's process.
#   defers_the_block: divides every time it reports by a hundred and replies to the judge's block at once, its
#     work done afterwards (queued on the device, or in the request that fetched the outputs when there was one):
#     the judge reads the outputs inside its clock.
FORGERIES = [
    ("gpu_exploits/forges_device_times.py", RELU_LARGE, "or the reported times are not the calls'", 1.5),
    ("exploits/slows_reference_in_its_process.py", RELU_LARGE, "something there slows the reference down", 1.5),
    ("gpu_exploits/defers_the_block.py", RELU, "unseen-inputs check", 1.0),
]


@pytest.mark.parametrize("candidate,problem,why,honest_speedup", FORGERIES, ids=[f[0] for f in FORGERIES])
def test_what_the_candidates_process_forges_is_caught_by_the_judges_clock(
    cuda_evaluator, candidate, problem, why, honest_speedup
):
    result = _evaluate(cuda_evaluator, problem, HERE / candidate, False)
    if SPLIT:
        assert result.status is Status.REJECTED, (result.reason, [c.timing.candidate.unseen_ms for c in result.cases])
        assert why in result.reason, result.reason
    else:
        assert result.status is Status.OK and result.speedup < honest_speedup, (result.reason, result.speedup)


def test_decoy_kernel_is_listed_for_review_when_the_policy_is_off(cuda_evaluator):
    """With the policy off (--allow-torch) a decoy kernel plus torch's softmax is correct, and honest about its
    speed, but the profile shows whose kernels did the work: it is listed for review."""
    result = _evaluate(cuda_evaluator, SOFTMAX, HERE / "exploits" / "decoy_kernel_getattr.py", False)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.profile and result.profile["own_share"] < 0.5, result.profile
    assert any("own kernels take" in note for note in result.review), result.review


CUDA_HONEST = HONEST  # the honest C++ kernels, CPU kernels, are tests/test_examples.py's


@pytest.mark.parametrize("candidate,problem,policy", CUDA_HONEST, ids=[h[0] for h in CUDA_HONEST])
def test_honest_kernel_is_accepted_on_cuda(cuda_evaluator, candidate, problem, policy):
    result = _evaluate(cuda_evaluator, problem, HERE / "honest" / candidate, policy)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert not result.interpreted and result.speedup and result.speedup > 0
    assert GPU_CHECKS | {"timing_outputs", "uninitialised_memory", "determinism"} <= set(result.checks), result.checks
    if policy:
        assert {"kernel_policy", "kernel_launch", "device_kernels"} <= set(result.checks), result.checks


def test_a_cuda_extension_is_built_by_the_harness_and_accepted(cuda_evaluator):
    """A CUDA kernel built with load_inline: the harness builds it in a step of its own (eval/builds/service.py), for
    this
    GPU's architecture, into the read-only extension cache; the candidate's process loads it and passes every check."""
    from kernelevolve.eval.builds.extension_cache import BUILT, extensions_root

    result = _evaluate(cuda_evaluator, RELU, HERE / "honest_gpu" / "relu_cuda.py", True)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert {"kernel_policy", "kernel_launch", "device_kernels"} <= set(result.checks), result.checks
    assert "cuda" in result.languages, result.languages
    assert any((folder / BUILT).is_file() for folder in extensions_root().iterdir()), list(extensions_root().iterdir())


def test_content_cache_gains_nothing_on_cuda(cuda_evaluator):
    """A cache keyed by a sample of the input's contents survives the rotation of input sets, and its outputs are
    correct. Calls on contents held back until after timing expose it (the unseen-inputs check): on a GPU each is
    timed by events as the series is, and a miss may take 1.25x the timed median (scaled by the reference's own
    drift on those contents) plus 20 us, so a cache gains at most that. Where its key's host sync is short the
    roofline check rejects it too (run 6 of docs/benchmarks/harness.md). It measured 1.75x, accepted, when the
    check took the host clock and 3x of room (run 26)."""
    result = _evaluate(cuda_evaluator, RELU_LARGE, HERE / "exploits" / "cache_by_content.py", False)
    if result.status is Status.REJECTED:
        assert "faster than the hardware allows" in result.reason or "unseen-inputs check" in result.reason, (
            result.reason
        )
    else:
        assert result.status is Status.OK, (result.reason, result.log_tail)
        assert result.speedup is not None and result.speedup < 1.25, result.speedup
