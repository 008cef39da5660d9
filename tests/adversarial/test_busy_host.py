"""A busy host is not the candidate's doing (issue 45, "Honest kernels on a busy host"): where the judge's own
measurements show the host contended, a timing check's failure is `inconclusive`, never `rejected`, and an `ok`
says its figure is unreliable; a candidate that makes the host look busy itself keeps its rejection. The signals
and thresholds: eval/worker/contention.py, docs/harness.md ("A busy host").

Timing-sensitive by nature: the first test expects no contention from CI's own load (two test processes on two
cores); where the machine is busier than that (other jobs beside the suite: a load average over 1.5 per core as it
starts) the host is contended in fact, and it is skipped saying so."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status

HERE = Path(__file__).resolve().parent
PARALLEL = HERE / "problems" / "relu_parallel.py"
FAST_TIMING = {"budget_s": 0.05, "max_iters": 20}
SPIN = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture
def busy_cores():
    """Two busy processes per core, each in a session of its own (as other users' jobs are: Linux gives each
    session its share of the cores), ended after the test (or after two minutes by themselves)."""
    spinners = 2 * (os.cpu_count() or 1)
    procs = [subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True) for _ in range(spinners)]
    time.sleep(0.3)  # started and spinning
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_an_honest_kernel_under_ci_s_own_load_is_not_called_contended(cpu_evaluator):
    """The candidate checks that its OpenMP pools are passive (it fails to load otherwise). Its calls, about a
    tenth of a millisecond, are long enough for the judge's clock around a request to resolve."""
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > 1.5 * cores:
        pytest.skip(f"the host is busier than CI's own load (load average {load:.1f} on {cores} cores)")
    result = cpu_evaluator.evaluate(load_problem(PARALLEL), HERE / "honest" / "relu_passive_pool.py", **FAST_TIMING)
    assert result.status is Status.OK, result.reason
    assert all(c.contention is not None for c in result.cases)
    assert not any(c.contention.contended for c in result.cases), [c.contention for c in result.cases]


def test_a_busy_process_on_every_core_makes_results_inconclusive_never_rejected(cpu_evaluator, busy_cores):
    """An honest kernel is never rejected where the judge measured the host contended: `ok`, its figure marked
    unreliable (or `inconclusive` where a timing check failed); a kernel whose timing check fails (it slows the
    reference in its process) is never accepted: `inconclusive` where the judge measured the host contended, its
    rejection where not. Neither gets a fitness it could rank by. The judge's 0.1 s look at the host does not see
    the contention every time on this VM (docs/harness.md, "A busy host"), but it sees it in one of the two."""
    honest = cpu_evaluator.evaluate(load_problem(PARALLEL), HERE / "honest" / "relu_where.py", **FAST_TIMING)
    slowed = cpu_evaluator.evaluate(
        load_problem(PARALLEL), HERE / "exploits" / "slows_reference_in_its_process.py", **FAST_TIMING
    )
    seen = [any(c.contention and c.contention.contended for c in r.cases) for r in (honest, slowed)]
    assert any(seen), [c.contention for r in (honest, slowed) for c in r.cases]
    if seen[0]:  # where the judge's look missed the contention, an honest kernel's timing check can still fail
        assert honest.status in (Status.OK, Status.INCONCLUSIVE), honest.reason
        assert honest.unreliable.startswith("a contended host"), [c.contention for c in honest.cases]
    assert slowed.status is (Status.INCONCLUSIVE if seen[1] else Status.REJECTED), slowed.reason
    assert "timing cross-check" in slowed.reason
    if seen[1]:
        assert "but the host was contended" in slowed.reason and "evaluate it again on an idle machine" in slowed.reason
    assert slowed.fitness == 0 and not slowed.correct


def test_a_candidate_that_makes_the_host_look_busy_keeps_its_rejection(cpu_evaluator):
    """It slows the reference in its own process and forks spinners while the judge measures alone: the judge's
    threads wait as on a busy host, but the candidate's processes' CPU time shows, and the rejection stands."""
    result = cpu_evaluator.evaluate(load_problem(PARALLEL), HERE / "exploits" / "spins_while_judged.py", **FAST_TIMING)
    assert result.status is Status.REJECTED, result.reason
    assert "timing cross-check" in result.reason
    contention = result.cases[0].contention
    assert contention is not None and not contention.contended, contention
    if contention.by_candidate:
        assert "that contention is the candidate's" in result.reason
