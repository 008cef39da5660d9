"""The adversarial suite: every exploit comes back incorrect or rejected with its reason naming the check that
caught it; honest kernels (Triton in the interpreter, PyTorch rewrites) are accepted, the Triton ones with the
kernel policy on. The honest C++ kernels are the examples' own, judged with the policy on in
tests/test_examples.py (a C++ build costs about a minute on CI's machine, so one build serves both)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.conftest import FIXTURES

HERE = Path(__file__).resolve().parent
RELU = FIXTURES / "kb_relu.py"
SCALE_SHIFT = FIXTURES / "scale_shift.py"
BUCKETIZE = FIXTURES / "bucketize_loop.py"
SOFTMAX = HERE / "problems" / "softmax_small.py"
RELU_MEDIUM = HERE / "problems" / "relu_medium.py"
TINY = HERE / "problems" / "tiny_outputs.py"
JAGGED = HERE / "problems" / "jagged_sum_small.py"
FAST_TIMING = {"budget_s": 0.05, "max_iters": 20}  # the timed checks need iterations, not precise times

INCORRECT, REJECTED = Status.INCORRECT, Status.REJECTED

# candidate, problem, kernel policy (None: the cpu default, off), status, what the reason must name
EXPLOITS = [
    ("stale_empty_like.py", RELU, None, INCORRECT, "uninitialised-memory check"),
    ("first_row_only.py", RELU, None, INCORRECT, "uninitialised-memory check"),
    ("disables_poison.py", RELU, None, INCORRECT, "check: given inputs"),
    ("returns_input.py", RELU, None, REJECTED, "aliasing check: the output shares memory with input 0"),
    ("returns_view.py", RELU, None, REJECTED, "aliasing check: the output shares memory with input 0"),
    ("tensor_subclass.py", RELU, None, REJECTED, "structure check: the output is a candidate.Liar"),
    ("lazy_wrapper.py", RELU, None, REJECTED, "structure check: the output is a candidate.Lazy"),
    ("instance_attributes.py", RELU, None, REJECTED, "structure check: the output carries instance attributes"),
    ("meta_output.py", RELU, None, REJECTED, "structure check: the output is a meta tensor"),
    ("mutates_input.py", RELU, None, INCORRECT, "inputs check: input 0 was modified"),
    ("zeros_tiny.py", TINY, None, INCORRECT, "elements beyond the error budget"),
    ("cache_by_pointer.py", RELU, None, INCORRECT, "timing-outputs check"),
    # Input sets of differing shapes are not rotated: the sets never timed are what a cache misses on (on a GPU;
    # on the cpu target a sampled timed call gives it away first, CPU_CATCHES).
    ("caches_jagged_by_pointer.py", JAGGED, None, REJECTED, "unseen-inputs check"),
    ("stale_result.py", RELU, None, INCORRECT, "correctness check: normal inputs"),
    ("nondeterministic.py", RELU, None, INCORRECT, "determinism check"),
    ("background_thread.py", RELU, None, REJECTED, "threads check: after forward returned"),
    ("worker_at_import.py", RELU, None, REJECTED, "threads check: after loading the candidate"),
    ("patches_perf_counter.py", RELU, None, REJECTED, "integrity check: the candidate re-bound time.perf_counter"),
    ("patches_comparator.py", RELU, None, REJECTED, "integrity check: the candidate re-bound kernelevolve.eval"),
    ("global_module_hook.py", RELU, None, REJECTED, "global hook or mode in place (torch.nn.modules.module._global_"),
    ("function_mode_left_on.py", RELU, None, REJECTED, "global hook or mode in place (torch function modes)"),
    ("sets_num_threads.py", RELU, None, REJECTED, "global state check: the candidate left torch's process-wide"),
    ("flushes_denormals.py", RELU, None, REJECTED, "global state check: the candidate left torch's process-wide"),
    ("calls_softmax.py", SOFTMAX, True, REJECTED, "kernel policy: ModelNew.forward calls torch.softmax"),
    ("calls_reference_model.py", SOFTMAX, True, REJECTED, "kernel policy: the candidate uses the reference Model"),
    ("computes_with_numpy.py", SOFTMAX, True, REJECTED, "kernel-launch check"),
    ("decoy_kernel_getattr.py", SOFTMAX, True, REJECTED, "kernel policy: ModelNew.forward looks up an attribute"),
]

# On the cpu target a few timed calls run on contents never shown and are judged (eval/worker/sampled.py): a cache by
# address serves them stale outputs, caught there before the timing-outputs check (which catches it on a GPU). A
# jagged set keeps its layout there and takes new floating contents, so the cache's key (address and shape) matches.
SAMPLED = (INCORRECT, "the output of a timed call on contents it had not seen is wrong")
CPU_CATCHES = {"cache_by_pointer.py": SAMPLED, "caches_jagged_by_pointer.py": SAMPLED}

# Exploits that reach for what the judge holds (its reference outputs, its private copy of the problem): caught
# where the candidate shares the judge's process (GPU targets, test_adversarial_gpu.py); on the cpu target they find
# nothing of the judge in the candidate's own process and are measured for what they are.
IN_PROCESS_EXPLOITS = [
    ("returns_reference.py", RELU, None, REJECTED, "aliasing check: the output shares memory with a reference"),
    ("rebinds_constants.py", RELU, None, REJECTED, "integrity check: the candidate re-bound problem.batch_size"),
    ("rebinds_case_constants.py", SCALE_SHIFT, None, REJECTED, "integrity check: the candidate re-bound problem."),
]

# candidate, problem, kernel policy
HONEST = [
    ("relu_triton.py", RELU, True),
    ("softmax_triton.py", SOFTMAX, True),
    ("scale_shift_triton.py", SCALE_SHIFT, True),
    ("relu_where.py", RELU, False),
    ("relu_out_buffer.py", RELU, False),
    ("relu_inplace_copy.py", RELU, False),
    ("relu_joined_threads.py", RELU, False),
    ("softmax_manual.py", SOFTMAX, False),
    ("scale_shift_addcmul.py", SCALE_SHIFT, False),
    ("bucketize_count.py", BUCKETIZE, False),
    ("jagged_sum_segment_reduce.py", JAGGED, False),
]


def assert_caught(result, status: Status, why: str) -> None:
    """An exploit is never accepted: it gets `status` for `why`; where that is a rejection of the timing checks
    and the judge measured the host contended without the candidate's doing (docs/harness.md, "A busy host"), the
    same finding may come back inconclusive instead."""
    if status is Status.REJECTED and host_was_busy(result):
        status = Status.INCONCLUSIVE
    assert result.status is status, (result.reason, result.speedup, result.log_tail)
    assert why in result.reason, result.reason
    assert not result.correct and result.fitness == 0


def host_was_busy(result) -> bool:
    """Whether the judge measured the host contended, without the candidate's doing, while it timed a case: an
    honest kernel may then come back inconclusive (never rejected), docs/harness.md "A busy host"."""
    busy = any(
        c.reliability.contention and c.reliability.contention.contended and not c.reliability.contention.by_candidate
        for c in result.cases
    )
    return result.status is Status.INCONCLUSIVE and busy


def contended_by_others(result) -> bool:
    """An `ok` whose figures the judge marked unreliable because the host was contended, not by the candidate's
    processes: such a figure ranks nothing (bench leaves it out of its figures, the search says so) and says
    nothing of what the candidate gains."""
    by_candidate = any(c.reliability.contention and c.reliability.contention.by_candidate for c in result.cases)
    return result.status is Status.OK and bool(result.unreliable) and not by_candidate


@pytest.mark.parametrize("candidate,problem,policy,status,why", EXPLOITS, ids=[e[0] for e in EXPLOITS])
def test_exploit_is_caught_by_its_check(cpu_evaluator, candidate, problem, policy, status, why):
    result = cpu_evaluator.evaluate(
        load_problem(problem), HERE / "exploits" / candidate, require_kernel=policy, **FAST_TIMING
    )
    status, why = CPU_CATCHES.get(candidate, (status, why))
    assert_caught(result, status, why)


@pytest.mark.parametrize("candidate,problem,policy", HONEST, ids=[h[0] for h in HONEST])
def test_honest_kernel_is_accepted(cpu_evaluator, candidate, problem, policy):
    result = cpu_evaluator.evaluate(
        load_problem(problem), HERE / "honest" / candidate, require_kernel=policy, **FAST_TIMING
    )
    if host_was_busy(result):
        return
    assert result.status is Status.OK, (result.reason, result.log_tail)
    expected = {"uninitialised_memory", "structure", "aliasing", "order", "determinism", "threads", "integrity"}
    if policy:
        expected |= {"kernel_policy", "kernel_launch"}
    if not result.interpreted:
        expected.add("timing_outputs")
        assert result.speedup and result.speedup > 0
    assert expected <= set(result.checks), result.checks


def test_content_cache_is_rejected_on_the_cpu(cpu_evaluator):
    """A cache keyed by a sample of the input's contents survives the rotation of the timing sets and its outputs
    are right, and the cpu target has no roofline to bound it. Calls on contents held back until after timing
    are as slow as real work, which gives the cache away (it was accepted at 9x before the check)."""
    result = cpu_evaluator.evaluate(
        load_problem(HERE / "problems" / "relu_medium.py"), HERE / "exploits" / "cache_by_content.py", **FAST_TIMING
    )
    assert_caught(result, Status.REJECTED, "results are reused across calls")
    assert "unseen-inputs check" in result.reason


@pytest.mark.parametrize("candidate", [e[0] for e in IN_PROCESS_EXPLOITS] + ["scales_timer_samples.py"])
def test_what_reaches_for_the_judge_finds_nothing_of_it_on_the_cpu(cpu_evaluator, candidate):
    """The reference outputs, the problem's private module and the timer's samples are the judge's, in another
    process: each of these honest kernels with a forgery attached is measured at what the kernel does (a ReLU,
    or a scale and shift, at eager's speed), correct and not faster."""
    problem = SCALE_SHIFT if candidate == "rebinds_case_constants.py" else RELU
    result = cpu_evaluator.evaluate(load_problem(problem), HERE / "exploits" / candidate, **FAST_TIMING)
    if result.status is Status.INCONCLUSIVE and host_was_busy(result):
        return  # an honest kernel on a busy host: never rejected, and not ranked either
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.speedup is not None and result.speedup < 2.5, result.speedup


@pytest.mark.parametrize(
    "candidate,why",
    [
        ("forges_reported_times.py", "timing cross-check: the candidate's process reported"),
        ("slows_reference_in_its_process.py", "something there slows the reference down"),
        # Issue 45, class 2: a correction the candidate's process served (its empty requests) cancelled the check.
        ("slows_empty_requests.py", "timing cross-check: the candidate's process reported"),
    ],
)
def test_forging_the_candidate_processes_own_clock_is_caught_by_the_judges(cpu_evaluator, candidate, why):
    """In its own process the candidate can rewrite what that process reports or slow the reference timed there,
    past the checks that run there: the judge's clock around each call, and the reference timed in the judge's
    own process, give it away."""
    result = cpu_evaluator.evaluate(load_problem(RELU_MEDIUM), HERE / "exploits" / candidate, **FAST_TIMING)
    assert_caught(result, Status.REJECTED, why)


def test_a_call_of_microseconds_gains_nothing_from_fixed_slacks(cpu_evaluator):
    """Issue 45, class 4: on `x * 2 + 1`, slowing the reference in its own process and reporting its own calls at a
    hundredth, each inside a fixed slack far larger than the call, gave 48x (3357x on this code before the fix).
    The speedup's baseline is the lower of the reference's times in the two processes, and the candidate's time is
    at least what the judge's clock around its calls allows: rejected, or a speedup of about 1x at most."""
    result = cpu_evaluator.evaluate(
        load_problem(HERE / "problems" / "scale_add_tiny.py"),
        HERE / "exploits" / "reports_at_the_floor.py",
        **FAST_TIMING,
    )
    if result.status is Status.OK:
        assert result.speedup is not None and result.speedup < 2.0, (result.speedup, result.review)
    else:  # either of its two forgeries caught: its own reports, or the reference it slowed
        assert_caught(result, Status.REJECTED, "timing cross-check: ")


def test_a_reply_the_candidate_forges_runs_nothing_in_the_judge(cpu_evaluator):
    """The candidate's process can write anything to its pipe to the judge; the judge reads replies with an
    unpickler that builds only the harness's own reply types, so a pickle that calls `exec` is refused, never run,
    and the evaluation ends there."""
    result = cpu_evaluator.evaluate(load_problem(RELU), HERE / "exploits" / "pickles_into_the_judge.py", **FAST_TIMING)
    assert "CANDIDATE-PID" in result.log_tail, result.log_tail  # the exploit ran in its own process
    assert "JUDGE-RAN-CANDIDATE-CODE" not in result.log_tail, result.log_tail
    assert result.status is Status.REJECTED, (result.status, result.reason)
    assert "a reply the judge does not accept" in result.reason, result.reason
