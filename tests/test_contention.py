"""The busy-host definition's parts without a worker (eval/worker/contention.py; the evaluations themselves:
tests/adversarial/test_busy_host.py): its thresholds, the verdicts it changes and those it keeps, the status only
the judge may give, and what `eval` prints of an unreliable figure."""

from __future__ import annotations

import io
import subprocess
import time

import pytest
from rich.console import Console

from kernelevolve.cli.eval_cmd import print_result
from kernelevolve.eval.worker import contention
from kernelevolve.eval.worker.checking import CandidateFailure
from kernelevolve.eval.worker.host import Remote
from kernelevolve.result import CaseResult, EvalResult, HostContention, Status

CROSS = "timing cross-check: the reference took 19.9 ms per call in the candidate's process and 0.13 ms"


def measured(wait: float | None, cpu: float | None = 0.0, spread: float = 1.2) -> HostContention:
    return contention.judge(HostContention(shortfall=wait, spread=spread, candidate_cpu=cpu, load=3.0))


def test_the_judge_s_wait_decides_and_the_candidate_s_own_cpu_time_vetoes():
    assert not measured(0.05).contended and not measured(None).contended
    assert not measured(0.1, spread=4.0).contended  # spread alone: reported, never a trigger
    assert measured(0.8).contended and not measured(0.8).by_candidate
    spun = measured(0.8, cpu=1.5)
    assert spun.by_candidate and not spun.contended
    assert measured(0.8, cpu=None).contended  # no candidate process to account for (the judge's own threads)


def test_a_timing_rejection_on_a_contended_host_is_inconclusive_and_says_what_to_do():
    found = contention.verdict(CandidateFailure(Status.REJECTED, CROSS), measured(0.7))
    assert found.status is Status.INCONCLUSIVE
    assert found.reason.startswith(f"inconclusive: {CROSS}; but the host was contended: ")
    assert "was denied 70% of the CPU" in found.reason and "evaluate it again on an idle machine" in found.reason
    unseen = CandidateFailure(Status.REJECTED, "unseen-inputs check: calls on inputs it had not seen took 9 ms")
    assert contention.verdict(unseen, measured(0.7)).status is Status.INCONCLUSIVE


@pytest.mark.parametrize(
    "failure,found",
    [
        (CandidateFailure(Status.REJECTED, CROSS), measured(0.1)),  # a quiet host: the rejection stands
        (CandidateFailure(Status.REJECTED, CROSS), None),  # never measured
        (CandidateFailure(Status.REJECTED, "threads check: after a timed call, 1 thread"), measured(0.9)),
        (CandidateFailure(Status.INCORRECT, "unseen-inputs check: the output is wrong"), measured(0.9)),
    ],
)
def test_what_a_busy_host_cannot_explain_keeps_its_verdict(failure, found):
    assert contention.verdict(failure, found) is failure


def test_contention_the_candidate_made_keeps_the_rejection_and_says_so():
    found = contention.verdict(CandidateFailure(Status.REJECTED, CROSS), measured(0.9, cpu=2.0))
    assert found.status is Status.REJECTED and found.reason.startswith(CROSS)
    assert "used 2.00 CPUs meanwhile with nothing to serve: that contention is the candidate's" in found.reason


@pytest.mark.parametrize("status", ["inconclusive", "no such status"])
def test_the_candidate_s_process_may_not_call_its_own_result_inconclusive(status):
    with pytest.raises(CandidateFailure) as caught:
        Remote._failure(("fail", status, "the host was busy, honestly"))
    assert caught.value.status is Status.REJECTED
    assert "a status only the judge may give" in caught.value.reason
    with pytest.raises(CandidateFailure) as caught:
        Remote._failure(("fail", "runtime_error", "boom"))
    assert caught.value.status is Status.RUNTIME_ERROR and caught.value.reason == "boom"


def _result(status: Status, wait: float) -> EvalResult:
    case = CaseResult(shape={"N": 8}, correct=True, t_candidate_ms=1.0, t_eager_ms=2.0, speedup=2.0)
    case.contention = measured(wait)
    return EvalResult(status=status, correct=False, cases=[case], target="cpu").finalize()


def test_an_ok_timed_on_a_contended_host_says_its_figure_is_unreliable_with_the_spread():
    quiet, busy = _result(Status.OK, 0.1), _result(Status.OK, 0.75)
    assert quiet.unreliable == "" and busy.correct and busy.fitness == pytest.approx(2.0)
    assert busy.unreliable.startswith("a contended host: timed on 1 of 1 cases while the judge's own timing")
    assert "spread 1.20x" in busy.unreliable and "was denied 75% of the CPU" in busy.unreliable
    again = EvalResult.model_validate_json(busy.model_dump_json())  # stored and read back, as the store does
    assert again.unreliable == busy.unreliable and again.cases[0].contention == busy.cases[0].contention
    assert busy.model_dump(mode="json")["unreliable"] == busy.unreliable  # `eval --json`
    out = io.StringIO()
    print_result(busy, Console(file=out, width=400))
    assert f"unreliable: {busy.unreliable}" in out.getvalue()


def test_inconclusive_has_no_fitness():
    result = _result(Status.INCONCLUSIVE, 0.8)
    assert not result.correct and result.fitness == 0 and result.unreliable


def test_the_probe_takes_its_window_and_stops_in_time():
    looks = []

    def look() -> float:
        time.sleep(0.002)
        looks.append(1)
        return 0.5 + 0.1 * len(looks)

    medians, found = contention.probe_looks(look, [])
    assert contention.PROBE_MIN_LOOKS <= len(medians) <= contention.PROBE_MAX_LOOKS
    assert found.candidate_cpu is None and found.spread == pytest.approx(max(medians) / min(medians))
    medians, _ = contention.probe_looks(lambda: 1e-4, [])
    assert len(medians) == contention.PROBE_MAX_LOOKS


def test_the_candidate_s_processes_are_every_descendant_of_the_judge():
    child = subprocess.Popen(["sh", "-c", "sleep 5 & sleep 5; wait"])
    try:
        time.sleep(0.2)
        found = contention.candidate_pids()
        assert str(child.pid) in found
        grandchildren = [p for p, parent in contention._parents().items() if parent == str(child.pid)]
        assert grandchildren and set(grandchildren) <= set(found)
    finally:
        child.kill()
        child.wait()


def test_the_shortfall_is_of_one_cpu_at_most():
    """A reference on two threads that gets one core whole is denied nothing: it is timed as on one thread."""
    second = 10**9
    assert contention.shortfall(second, 0, 1.0) == 0.0  # one thread, never waited
    assert contention.shortfall(second, second, 1.0) == 0.0  # two threads sharing one core: one CPU got
    assert contention.shortfall(second // 2, second // 2, 1.0) == pytest.approx(0.5)  # half of one CPU
    assert contention.shortfall(second // 3, 2 * second, 1.0) == pytest.approx(2 / 3)
    assert contention.shortfall(0, 0, 1.0) is None


def test_a_call_below_what_the_judge_resolves_is_unreliable_too():
    case = CaseResult(shape={"N": 8}, correct=True, t_candidate_ms=0.03, t_eager_ms=0.01, speedup=1 / 3)
    case.unresolved = "the candidate's process reported 0.001 ms per call, below what the judge's clock allows"
    result = EvalResult(status=Status.OK, correct=True, cases=[case], target="cpu").finalize()
    assert result.unreliable == f"{case.unresolved} (N=8)"
    case.contention = measured(0.6)
    assert result.unreliable.startswith("a contended host") and result.unreliable.endswith(f"{case.unresolved} (N=8)")


def _during(wait: float | None, others: float | None = 0.0) -> HostContention:
    return contention.judge(
        HostContention(shortfall=0.0, candidate_cpu=0.0, load=3.0, pass_shortfall=wait, pass_others_cpu=others)
    )


def test_the_timing_pass_s_own_wait_is_a_second_signal_with_its_own_veto():
    """The 0.1 s look after the pass can read a busy host as idle; the pass's own run-queue wait (the judge's and
    the candidate's process's threads, read from /proc) then says it. Processes the candidate started, busy over
    the pass, make that contention its own."""
    assert not _during(None).contended and not _during(contention.PASS_SHORTFALL / 2).contended
    assert _during(0.6).contended and "waited for 60% of the CPU they wanted" in _during(0.6).describe()
    spun = _during(0.6, others=1.0)
    assert spun.by_candidate and not spun.contended
    found = contention.verdict(CandidateFailure(Status.REJECTED, CROSS), spun)
    assert found.status is Status.REJECTED
    assert "processes the candidate started used 1.00 CPUs over the timing pass" in found.reason
    assert contention.verdict(CandidateFailure(Status.REJECTED, CROSS), _during(0.6)).status is Status.INCONCLUSIVE


def test_the_pass_load_counts_the_candidate_s_other_processes_not_the_one_serving_calls():
    serving = subprocess.Popen(["sleep", "5"])
    try:
        time.sleep(0.1)
        during = contention.PassLoad([serving.pid])
        spinner = subprocess.Popen(["sh", "-c", "while :; do :; done"])
        try:
            while time.perf_counter() - during.t0 < 0.3:  # the test's own thread waits too: it has a share
                pass
            found = during.done()
        finally:
            spinner.kill()
            spinner.wait()
        assert found.pass_others_cpu is not None and found.pass_others_cpu > 0  # the spinner, not the sleeper
        assert found.pass_shortfall is not None and 0.0 <= found.pass_shortfall <= 1.0
    finally:
        serving.kill()
        serving.wait()
