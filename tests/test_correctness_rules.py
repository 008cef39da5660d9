"""The correctness rules through the harness: what a result records of the rule, KernelBench's verdict beside
ours, and the precision policy."""

from __future__ import annotations

from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.conftest import CANDIDATES, FIXTURES


def test_the_measured_rule_is_recorded_with_kernelbench_s_verdict(cpu_evaluator, relu_problem):
    ok = cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_ok.py", trials=3, timed=False)
    assert ok.status is Status.OK, ok.reason
    case = ok.cases[0]
    assert (
        case.accuracy.rule.startswith("measured")
        and case.accuracy.error_ratio is not None
        and case.accuracy.error_ratio <= 16
    )
    assert ok.kernelbench_correct is True
    clamped = cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_clamped.py", trials=3, timed=False)
    assert clamped.status is Status.INCORRECT and "large inputs" in clamped.reason
    assert clamped.kernelbench_correct is True  # right on get_inputs(): KernelBench would have accepted it


def test_kernelbench_mode_judges_given_inputs_at_one_percent(cpu_evaluator, relu_problem):
    result = cpu_evaluator.evaluate(
        relu_problem, CANDIDATES / "relu_clamped.py", trials=2, timed=False, correctness="kernelbench"
    )
    assert result.status is Status.OK, result.reason
    assert result.cases[0].accuracy.trials == ["given", "given"]
    assert result.cases[0].accuracy.rule.startswith("kernelbench")


def test_a_candidate_that_turns_tf32_on_is_rejected(cpu_evaluator, relu_problem):
    result = cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_sets_tf32.py", trials=1, timed=False)
    assert result.status is Status.REJECTED
    assert "precision policy" in result.reason and "torch.backends.cuda.matmul.allow_tf32" in result.reason
    allowed = cpu_evaluator.evaluate(
        relu_problem, CANDIDATES / "relu_sets_tf32.py", trials=1, timed=False, allow_tf32=True
    )
    assert allowed.status is Status.OK, allowed.reason


def test_the_harness_running_out_of_memory_is_its_own_limit(cpu_evaluator):
    problem = load_problem(FIXTURES / "bad_huge_inputs.py")
    result = cpu_evaluator.evaluate(problem, CANDIDATES / "relu_ok.py", trials=1, timed=False)
    assert result.status is Status.HARNESS_LIMIT, result.reason
    assert "harness limit" in result.reason and "before the candidate loaded" in result.reason


def test_a_case_timed_on_a_busy_host_is_timed_again(monkeypatch):
    """In process: the run-queue wait reports a busy host for the first timing pass only; the case is timed once
    more, the second pass stands, and the review says so."""
    import torch

    from kernelevolve.eval.wire import EvalJob
    from kernelevolve.eval.worker import harness

    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")  # restored after: run_job sets the precision policy
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", torch.backends.cudnn.allow_tf32)
    passes = []

    class Busy:
        def __init__(self, pids=None):
            passes.append(self)

        def note(self):
            return "threads waited for a CPU 80% of the timed wall time" if len(passes) == 1 else ""

    monkeypatch.setattr(harness, "RunQueueWait", Busy)
    job = EvalJob(
        problem_path=str(FIXTURES / "kb_relu.py"),
        candidate_path=str(CANDIDATES / "relu_ok.py"),
        target="cpu",
        seed=3,
        compile_baseline=False,
        max_iters=5,
        budget_s=0.05,
    )
    result = harness.run_job(job, lambda stage: None)
    assert result.status is Status.OK, result.reason
    assert len(passes) == 2
    assert any("timed twice: during the first timing, threads waited" in n for n in result.review), result.review
