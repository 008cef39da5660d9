"""The harness's check modules, in process: poisoning, output structure and aliasing, threads, integrity,
speed bounds, the timer's hooks, and the launch monitor."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest
import torch

from kernelevolve.eval.worker import hostload, integrity, launches, poison, speed, threads
from kernelevolve.eval.worker.harness import confirm_host_tails
from kernelevolve.eval.worker.outputs import aliased, not_plain, spans
from kernelevolve.eval.worker.timing import Timer, TimerConfig, TimingStats
from kernelevolve.platforms.peaks import Peaks
from kernelevolve.result import CaseResult
from tests.conftest import ROOT

CPU = torch.device("cpu")


def test_poisoned_allocations_hold_the_pattern_only_while_active():
    x = torch.randn(64, 1024)
    freed = torch.relu(x)  # a result freed just before the candidate allocates: stale memory
    del freed
    with poison.Poisoned(CPU, poison.output_sizes(x)):
        y = torch.empty_like(x)
    assert poison.poisoned_elements(y) == y.numel()
    assert float(y.abs().max()) > 1e38  # float32 reads the pattern as ~3.4e38
    with poison.Poisoned(CPU, []):
        half = torch.empty(100, dtype=torch.float16)
    assert bool(torch.isnan(half).all())
    assert poison.poisoned_elements(torch.zeros(10)) == 0


def test_outputs_must_be_plain_materialised_tensors():
    class Sub(torch.Tensor):
        pass

    x = torch.randn(4)
    assert not_plain(x) == "" and not_plain((x, 3, 1.5)) == ""
    assert "Sub" in not_plain(x.as_subclass(Sub))
    assert "meta" in not_plain(torch.empty(4, device="meta"))
    tagged = torch.randn(4)
    tagged.double = lambda: x
    assert "instance attributes" in not_plain(tagged)
    assert "not a plain" in not_plain(types.SimpleNamespace())


def test_aliasing_is_storage_overlap():
    x = torch.randn(8, 8)
    protected = spans([x], "input {i}")
    assert aliased(x[2:4], protected) == "the output shares memory with input 0"
    assert aliased(x.clone(), protected) == ""
    assert aliased((x.clone(), x.t()), protected) == "output 1 shares memory with input 0"


def test_thread_watch_turns_off_tqdms_monitor_thread(monkeypatch):
    """tqdm starts a monitor thread with its first bar (a library's progress bar in the candidate's process, which
    two honest seeds were rejected for on a GPU): the watch turns it off before it can be taken for a thread the
    candidate left running."""
    bar = type("tqdm", (), {"monitor_interval": 10})
    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=bar))
    threads.ThreadWatch()
    assert bar.monitor_interval == 0


def test_thread_watch_sees_threads_left_running_but_not_joined_ones():
    watch = threads.ThreadWatch()
    done = threading.Thread(target=lambda: None)
    done.start()
    done.join()
    assert watch.check() == ""
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass

    busy = threading.Thread(target=spin, name="spinner", daemon=True)
    busy.start()
    try:
        assert "spinner" in watch.python_left()
        # Sampled CPU time: on a loaded machine one sample can find the spinner waiting for a core.
        assert any("native thread" in watch.native_busy() for _ in range(5))
    finally:
        stop.set()
        busy.join()
    assert watch.check() == ""


def test_integrity_covers_code_swaps_class_additions_and_the_harness():
    import kernelevolve.eval.worker.checking as checking
    from kernelevolve.eval.worker.correctness import Comparison

    watched = integrity.harness_modules()
    assert "kernelevolve.eval.worker.timing.Timer" in watched and "kernelevolve.eval.worker.checking" in watched
    before = integrity.fingerprint(watched)
    original = checking.compare
    code = Comparison.merge.__code__
    try:
        checking.compare = lambda *a: Comparison(True)
        Comparison.merge.__code__ = (lambda self, other: self).__code__
        Timer.time_interleaved_fast = lambda *a: {}
        found = integrity.changed(before, watched)
    finally:
        checking.compare = original
        Comparison.merge.__code__ = code
        del Timer.time_interleaved_fast
    assert "kernelevolve.eval.worker.checking.compare" in found
    assert "kernelevolve.eval.worker.correctness.Comparison.merge" in found
    assert "kernelevolve.eval.worker.timing.Timer.time_interleaved_fast" in found
    assert integrity.changed(before, watched) == []


def test_timer_hooks_run_outside_the_timed_call():
    calls, midway = [], []
    timer = Timer(CPU, TimerConfig(warmup_iters=1, min_iters=10, max_iters=10))
    fns = {"a": lambda inp: inp[0] + 1, "b": lambda inp: inp[0] * 2}
    sets = [[torch.ones(3)] for _ in range(3)]
    stats = timer.time_interleaved(fns, sets, after_call=calls.append, midway=lambda: midway.append(len(calls)))
    assert stats["a"].n == 10 and len(calls) == 20 and midway == [10]


def _case(**kw: float) -> CaseResult:
    return CaseResult(shape={}, correct=True, **kw)


def test_roofline_host_clock_and_review_bounds():
    peaks = Peaks("gpu", bandwidth_gbs=1000.0, fp32_tflops=50.0, half_tflops=500.0, datasheet=None, torch_version="")
    bound = max(speed.roofline_parts_ms(10**9, None, peaks))  # 1 GB at 1 TB/s
    assert bound == pytest.approx(1.0)
    assert speed.roofline_parts_ms(10**9, 1e12, peaks) == pytest.approx((1.0, 2.0))  # 1 TFLOP at 500 TFLOP/s
    # The HBM share is taken against the measured bandwidth even where a datasheet's is higher (the floor's).
    sheet = Peaks(
        "gpu",
        bandwidth_gbs=1000.0,
        fp32_tflops=50.0,
        half_tflops=None,
        datasheet=(2000.0, 60.0, 600.0),
        torch_version="",
    )
    assert speed.roofline_parts_ms(10**9, None, sheet)[0] == pytest.approx(0.5)
    assert speed.measured_bytes_ms(10**9, sheet) == pytest.approx(1.0)
    assert speed.too_fast(_case(t_candidate_ms=0.3), bound).startswith("faster than the hardware allows")
    assert speed.too_fast(_case(t_candidate_ms=0.8), bound) == ""
    # Seen on the H200: five Triton launches issued in 0.2-0.3 ms around 0.05 ms of device work; the device is
    # idle soon after the last launch returns, however long the launches took.
    launch_bound = _case(t_candidate_ms=0.047, t_candidate_tail_ms=0.03, t_eager_ms=2.78, t_eager_tail_ms=2.6)
    assert speed.host_clock_gap(launch_bound) == ""
    device_bound = _case(t_candidate_ms=1.0, t_candidate_tail_ms=0.98, t_eager_ms=2.0, t_eager_tail_ms=1.99)
    assert speed.host_clock_gap(device_bound) == ""
    side_stream = _case(t_candidate_ms=0.005, t_candidate_tail_ms=0.5, t_eager_ms=0.02, t_eager_tail_ms=0.03)
    assert "outside the timed stream" in speed.host_clock_gap(side_stream)
    assert speed.host_clock_gap(_case(t_candidate_ms=0.005)) == ""  # no host clock (cpu): nothing to compare
    assert "review" in speed.review_note(_case(speedup=12.0)) and speed.review_note(_case(speedup=3.0)) == ""
    assert speed.tensor_bytes([torch.zeros(10), 3], torch.zeros(2, dtype=torch.float16)) == 44


class _HostClock:
    """Stands in for Timer.time_host: each call returns the next tails (ms) per function."""

    def __init__(self, *rounds: dict[str, float]):
        self.rounds, self.calls = list(rounds), 0

    def time_host(self, fns, sets):
        tails = self.rounds[self.calls]
        self.calls += 1
        return {n: TimingStats(median_ms=t, iqr_ms=0.0, n=10, tail_ms=t) for n, t in tails.items()}


def test_host_clock_check_measures_again_before_it_rejects():
    fns = {"eager": None, "candidate": None}
    # One stretched median (run 10: an honest kernel at 0.026 ms with a 0.127 ms tail), normal when measured again.
    noisy = _case(t_candidate_ms=0.026, t_candidate_tail_ms=0.127, t_eager_ms=0.077, t_eager_tail_ms=0.08)
    clock = _HostClock({"eager": 0.079, "candidate": 0.03})
    confirm_host_tails(lambda: clock.time_host(fns, []), noisy)
    assert clock.calls == 1 and noisy.timing.candidate.tail_ms == 0.03 and speed.host_clock_gap(noisy) == ""
    # Work on a side stream stretches every measurement: still rejected.
    side = _case(t_candidate_ms=0.005, t_candidate_tail_ms=0.5, t_eager_ms=0.02, t_eager_tail_ms=0.03)
    clock = _HostClock({"eager": 0.03, "candidate": 0.49})
    confirm_host_tails(lambda: clock.time_host(fns, []), side)
    assert clock.calls == 1 and "outside the timed stream" in speed.host_clock_gap(side)
    # Nothing to confirm: no second measurement.
    fine = _case(t_candidate_ms=0.05, t_candidate_tail_ms=0.05, t_eager_ms=0.1, t_eager_tail_ms=0.1)
    clock = _HostClock()
    confirm_host_tails(lambda: clock.time_host(fns, []), fine)
    assert clock.calls == 0


def test_launch_monitor_and_kernel_names(tmp_path):
    """Seeing real launches is covered end to end (honest kernels pass the policy in tests/adversarial)."""
    source = (ROOT / "tests" / "adversarial" / "honest" / "relu_triton.py").read_text()
    assert launches.kernel_names(source) == {"_relu"}
    cuda = 'k = load_inline(name="k", cpp_sources="", cuda_sources=r"""__global__ void scale_rows(float* x) {}""")'
    assert launches.kernel_names(cuda) == {"scale_rows"}
    # Written by a model on the H200 and rejected as running no kernel of its own: the launch bounds after `void`.
    spellings = (
        "__global__ void __launch_bounds__(BET_NT) bet_fused_kernel(const int64_t* a) {}\n"
        "template <int BLOCK> __global__ __launch_bounds__(BLOCK, 2) void tiled_kernel(float* y) {}\n"
        'extern "C" __global__ void __attribute__((noinline)) plain_kernel (float* y) {}\n'
        "__device__ float helper(float x) { return x; }\n"
    )
    found = launches.kernel_names(f"src = {spellings!r}")
    assert found == {"bet_fused_kernel", "tiled_kernel", "plain_kernel"}
    with launches.LaunchMonitor(str(tmp_path / "cand.py")) as idle:
        torch.relu(torch.randn(100))
    assert idle.seen == []
    assert launches.ran_candidate_kernel(["void scale_rows(float*)", "aten::copy_"], {"scale_rows"})


def test_threads_check_is_cheap_without_busy_threads():
    t0 = time.perf_counter()
    threads.ThreadWatch().native_busy()
    assert time.perf_counter() - t0 < 0.1


def test_unseen_inputs_check_takes_a_second_round_of_new_inputs_before_it_rejects(monkeypatch):
    from types import SimpleNamespace

    from kernelevolve.eval.worker import harness
    from kernelevolve.eval.worker.harness import CandidateFailure, check_unseen_inputs

    sets = [[torch.zeros(4)] for _ in range(3)]

    def case_with_held_back_sets(n=4):
        return SimpleNamespace(
            timing_sets=sets, unseen_sets=[[torch.zeros(4)] for _ in range(n)], unseen_refs=[None] * n, unseen_used=0
        )

    pc = case_with_held_back_sets()
    g = SimpleNamespace(ran=lambda *names: None)
    timer = SimpleNamespace(on_device=False)

    def scripted(*rounds):
        calls = []

        def one_round(timer, pc, model, g, indices, jagged):
            calls.append(list(indices))
            return *rounds[len(calls) - 1], []

        monkeypatch.setattr(harness, "_unseen_round", one_round)
        return calls

    # Seen on the CPU while the test suite ran: both unseen calls of a round stalled for a scheduler slice.
    calls = scripted(([8.7, 8.9], [0.6, 0.7]), ([0.6, 0.65], [0.6, 0.6]))
    cr = _case(t_candidate_ms=0.6)
    pc = case_with_held_back_sets()
    check_unseen_inputs(timer, pc, None, cr, g)
    assert calls == [[0, 1], [2, 3]] and cr.timing.candidate.unseen_ms == 0.6
    # A cache keyed by content misses on every new set: rejected after the second round.
    calls = scripted(([4.0, 4.1], [0.03, 0.03]), ([4.0, 4.2], [0.03, 0.03]))
    pc = case_with_held_back_sets()
    with pytest.raises(CandidateFailure, match="2 rounds of new inputs"):
        check_unseen_inputs(timer, pc, None, _case(t_candidate_ms=0.03), g)
    assert len(calls) == 2
    # The same cache while the host stalled one call on seen inputs for 5 ms in each round: the fastest seen call
    # sets the bound, so the stall does not excuse the misses (by the slowest, both rounds passed at 15.1 ms).
    calls = scripted(([14.6, 14.9], [5.0, 0.2, 0.2, 0.2]), ([14.6, 14.9], [0.2, 0.2, 0.2, 5.0]))
    pc = case_with_held_back_sets()
    with pytest.raises(CandidateFailure, match="results are reused"):
        check_unseen_inputs(timer, pc, None, _case(t_candidate_ms=0.1), g)
    # A first round that passes ends the check.
    calls = scripted(([0.6, 0.62], [0.6, 0.6]))
    pc = case_with_held_back_sets()
    check_unseen_inputs(timer, pc, None, _case(t_candidate_ms=0.6), g)
    assert calls == [[0, 1]]


def test_on_a_gpu_the_unseen_inputs_check_leaves_a_content_cache_no_room(monkeypatch):
    """On the H200 a cache keyed by a sample of the contents measured 1.75x at 0.074 ms a call, its misses 0.64 ms
    on the host clock, within the cpu's room of 3x plus 0.1 ms. A GPU times its single calls by events, as the
    series is timed, and leaves 1.5x: a miss that does the real work is over that, an honest kernel's jitter is not."""
    from types import SimpleNamespace

    from kernelevolve.eval.worker import harness
    from kernelevolve.eval.worker.harness import CandidateFailure, check_unseen_inputs

    def case():
        return SimpleNamespace(
            timing_sets=[[torch.zeros(4)]] * 3,
            unseen_sets=[[torch.zeros(4)]] * 4,
            unseen_refs=[None] * 4,
            unseen_used=0,
        )

    def rounds(unseen, seen, ref=()):
        monkeypatch.setattr(
            harness, "_unseen_round", lambda timer, pc, model, g, indices, jagged: (unseen, seen, list(ref))
        )

    g = SimpleNamespace(ran=lambda *names: None)
    gpu, cpu = SimpleNamespace(on_device=True), SimpleNamespace(on_device=False)
    rounds([0.13, 0.135], [0.074, 0.075], [0.13, 0.131])  # misses do the eager call's work; hits read 64 elements
    with pytest.raises(CandidateFailure, match="results are reused"):
        check_unseen_inputs(gpu, case(), None, _case(t_candidate_ms=0.074, t_eager_ms=0.13), g)
    check_unseen_inputs(cpu, case(), None, _case(t_candidate_ms=0.074), g)  # a busy host's room covers it there
    rounds([0.108, 0.104], [0.1, 0.101], [0.13, 0.13])  # an honest kernel: single calls within a few per cent
    check_unseen_inputs(gpu, case(), None, _case(t_candidate_ms=0.1, t_eager_ms=0.13), g)
    rounds([0.011, 0.012], [0.005, 0.005])  # a launch-bound one: microseconds of jitter fall in the slack
    check_unseen_inputs(gpu, case(), None, _case(t_candidate_ms=0.005), g)
    # Work that depends on the values: new contents that hold 1.8x the work slow the reference alike, and the
    # bound follows it; the same calls with the reference unmoved are a cache's misses.
    rounds([0.18, 0.185], [0.1, 0.1], [0.234, 0.24])
    check_unseen_inputs(gpu, case(), None, _case(t_candidate_ms=0.1, t_eager_ms=0.13), g)
    rounds([0.18, 0.185], [0.1, 0.1], [0.13, 0.13])
    with pytest.raises(CandidateFailure, match="results are reused"):
        check_unseen_inputs(gpu, case(), None, _case(t_candidate_ms=0.1, t_eager_ms=0.13), g)
    # ... and a candidate that slows the reference's calls on the new contents buys at most MAX_WORK_DRIFT.
    rounds([0.5, 0.5], [0.074, 0.074], [13.0, 13.0])
    with pytest.raises(CandidateFailure, match="results are reused"):
        check_unseen_inputs(gpu, case(), None, _case(t_candidate_ms=0.074, t_eager_ms=0.13), g)


def test_a_second_timing_pass_checks_with_sets_the_candidate_has_not_seen(monkeypatch):
    """The cpu target times a case again when the host kept it waiting; the held-back sets the first pass showed
    the candidate are cached by a content cache, so the second pass must take new ones (a cache was accepted at 20x
    on a busy CI machine when it re-used them). With none left, it skips rather than re-use."""
    from types import SimpleNamespace

    from kernelevolve.eval.worker import harness
    from kernelevolve.eval.worker.harness import CandidateFailure, check_unseen_inputs
    from kernelevolve.eval.worker.prepare import UNSEEN_SETS, unseen_sets_for

    assert unseen_sets_for(torch.device("cpu")) == 2 * UNSEEN_SETS
    n = unseen_sets_for(torch.device("cpu"))
    pc = SimpleNamespace(
        timing_sets=[[torch.zeros(4)]] * 3, unseen_sets=[[torch.zeros(4)]] * n, unseen_refs=[None] * n, unseen_used=0
    )
    calls = []

    def cache_misses(timer, pc, model, g, indices, jagged):
        calls.append(list(indices))
        return [4.0] * len(indices), [0.03] * len(indices), []

    monkeypatch.setattr(harness, "_unseen_round", cache_misses)
    g, timer = SimpleNamespace(ran=lambda *names: None), SimpleNamespace(on_device=False)
    for _ in range(2):
        with pytest.raises(CandidateFailure, match="results are reused"):
            check_unseen_inputs(timer, pc, None, _case(t_candidate_ms=0.03), g)
    assert calls == [[0, 1], [2, 3], [4, 5], [6, 7]]
    check_unseen_inputs(timer, pc, None, _case(t_candidate_ms=0.03), g)  # nothing fresh: no call, no verdict
    assert len(calls) == 4


@pytest.mark.skipif(hostload._waited_ns() is None, reason="the kernel reports no run-queue wait (schedstat)")
def test_run_queue_wait_counts_time_spent_waiting_for_a_cpu(monkeypatch):
    """Two busy threads pinned to one core: each waits about half the time, and the share says so."""
    cpu = min(os.sched_getaffinity(0))
    busy = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
    before = os.sched_getaffinity(0)
    try:
        time.sleep(0.2)  # the competitor is running
        os.sched_setaffinity(0, {cpu})
        waited = hostload.RunQueueWait()
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            pass
        share = waited.share()
        note = waited.note()
    finally:
        os.sched_setaffinity(0, before)
        busy.kill()
        busy.wait()
    assert share is not None and share > 0.25, share
    assert "waited for a CPU" in note
    quiet = hostload.RunQueueWait()
    time.sleep(0.05)  # not runnable, so not waiting
    assert quiet.note() == ""
    monkeypatch.setattr(hostload, "PROC", "/nonexistent")
    assert hostload.RunQueueWait().note() == ""  # where Linux does not report it, no note rather than a guess


def test_speed_checks_on_a_gpu_target_record_the_floor_its_kind_and_the_bytes_at_measured_bandwidth():
    """The cuda branch of the harness's speed checks, driven on the CPU with a stand-in guard: 1 GB and 1 TFLOP
    on a device measured at 1 TB/s (datasheet 2 TB/s) and 500 TFLOP/s."""
    from types import SimpleNamespace

    from kernelevolve.eval.worker.harness import speed_checks
    from kernelevolve.result import EvalResult, Status

    peaks = Peaks(
        "gpu",
        bandwidth_gbs=1000.0,
        fp32_tflops=50.0,
        half_tflops=500.0,
        datasheet=(2000.0, 60.0, 600.0),
        torch_version="",
    )
    host = SimpleNamespace(l2_persisting=lambda: 0)
    guard = SimpleNamespace(device=torch.device("cuda"), ran=lambda *names: None, host=host)
    for flops, memory_bound, floor in ((None, True, 0.5), (1e12, False, 1e12 / 600e12 * 1e3)):
        cr = _case(t_candidate_ms=2.0)
        pc = SimpleNamespace(min_bytes=10**9, flops=flops)
        assert speed_checks(pc, cr, peaks, guard, EvalResult(status=Status.OK, correct=True)) == ""
        assert cr.roofline.floor_ms == pytest.approx(floor) and cr.roofline.memory_bound is memory_bound
        assert cr.roofline.bytes_ms == pytest.approx(1.0)  # at the measured 1 TB/s, not the datasheet's 2


def test_the_cpu_timer_counts_the_page_faults_of_timed_calls_and_a_paging_case_is_listed_for_review():
    """A call handed 64 MB of fresh memory each time (over glibc's mmap threshold) pages it in on every call; one
    writing into memory it holds does not. Counted, not timed: host load cannot move it."""
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.is_file() and "[always]" in thp.read_text():
        pytest.skip("transparent huge pages set to always: one fault maps 2 MB, so the 4 KB-page counts do not hold")
    held = torch.empty(4096 * 4096)

    def fresh(inputs):
        return torch.empty(4096 * 4096).fill_(1.0)

    def in_place(inputs):
        return held.fill_(1.0)

    cfg = TimerConfig(warmup_iters=1, min_iters=4, max_iters=4, budget_s=0.0)
    stats = Timer(torch.device("cpu"), cfg).time_interleaved({"candidate": in_place, "eager": fresh}, [[]])
    assert stats["eager"].faults_per_call > 10_000 and stats["candidate"].faults_per_call < 100
    note = speed.review_note(_case(eager_faults_per_call=stats["eager"].faults_per_call, candidate_faults_per_call=0))
    assert note.startswith("timed calls page (eager 16") and "candidate" not in note
    assert speed.review_note(_case(eager_faults_per_call=3.0, candidate_faults_per_call=0.0)) == ""
    both = speed.review_note(_case(speedup=12.0, eager_faults_per_call=5000.0))
    assert "exceeds" in both and "timed calls page" in both


_REUSE_PROBE = """
import ctypes, resource, sys
from kernelevolve.eval.worker import allocator
fixed = allocator.fix_thresholds()
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
n, counts = 12 * 1024 * 1024, []
for _ in range(6):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [libc.malloc(n) for _ in range(3)]
    for b in blocks:
        ctypes.memset(b, 1, n)
    for b in blocks:
        libc.free(b)
    counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
print(fixed, *counts)
"""


def test_the_worker_heap_reuses_freed_temporaries_whatever_the_process_history():
    """Three 12 MB temporaries freed after every call: with glibc's adaptive thresholds a young process hands them
    fresh pages on every call (9,000 faults each), with the thresholds fixed it reuses its heap after the first."""
    out = subprocess.run([sys.executable, "-c", _REUSE_PROBE], capture_output=True, text=True, cwd=ROOT, check=True)
    fixed, *counts = out.stdout.split()
    if fixed != "True":
        pytest.skip("not glibc: no mallopt thresholds to fix")
    assert int(counts[0]) > 10  # the first call pages its temporaries in
    assert all(int(c) < 100 for c in counts[1:]), counts


def test_a_reference_slower_beside_the_candidate_than_alone_in_the_judge_is_listed_for_review():
    """cpu: the judge times the reference alone in its own process as well; a case where it ran past 1.5x that
    beside the candidate says so, and one within it does not."""
    note = speed.review_note(_case(t_eager_ms=30.0, t_eager_judge_ms=10.0))
    assert note.startswith("the reference took 3.00x as long beside the candidate") and "30 against 10 ms" in note
    assert speed.review_note(_case(t_eager_ms=14.0, t_eager_judge_ms=10.0)) == ""
    assert speed.review_note(_case(t_eager_ms=30.0)) == ""  # GPU targets: no judge-alone timing


def test_on_a_gpu_the_speedup_takes_the_lower_of_the_two_processes_baselines():
    """GPU, the candidate in its own process: a baseline timed there and in the judge's counts at the lower of the
    two, so a reference slowed beside the candidate (below the cross-check's rejection) raises no speedup; past
    1.5x apart the case says so. A faster median in the candidate's process stands as timed."""
    from types import SimpleNamespace

    from kernelevolve.eval.worker import harness

    g = SimpleNamespace(review=[])
    cr = _case(t_eager_ms=2.0, t_compile_ms=1.0, t_candidate_ms=0.5)
    harness.lower_baselines(cr, {"eager": 2.0, "compile": 1.0}, {"eager": 1.0, "compile": 1.1}, g)
    assert (cr.timing.eager.median_ms, cr.timing.compile.median_ms) == (1.0, 1.0)
    assert len(g.review) == 1 and "the reference took 2 ms in the candidate's process and 1 ms" in g.review[0]
    cr = _case(t_eager_ms=1.2)  # no torch.compile baseline timed
    harness.lower_baselines(cr, {"eager": 1.2}, {"eager": 1.0}, g)
    assert cr.timing.eager.median_ms == 1.0 and cr.timing.compile.median_ms is None and len(g.review) == 1
    assert harness.REFERENCE_FACTOR_GPU > 2.0  # host-bound references: about 2x apart from one process to the other


@pytest.mark.parametrize("n_sets", [1, 2])
def test_the_unseen_round_never_shows_the_new_contents_before_the_call_it_times(n_sets):
    """The held-back contents go into the first timing set's buffers: before the candidate's call on seen inputs
    where those are another set (so the timed call follows one of the candidate's, as in the timing loop), after
    it where there is one set (else that call would see them first); with one set every call of the round follows
    a write of its contents (the seen ones rewritten), so the seen calls bound the new one like for like."""
    from kernelevolve.eval.worker.checking import Guard
    from kernelevolve.eval.worker.correctness import Comparison
    from kernelevolve.eval.worker.harness import _unseen_round

    sets = [[torch.full((4,), float(i))] for i in range(n_sets)]
    new = [torch.full((4,), 7.0)]
    seen_by_calls: list[float] = []

    written_before: list[bool] = []
    last_version = [sets[0][0]._version]  # the buffers the one-set case reads

    def model(x):
        seen_by_calls.append(float(x[0]))
        written_before.append(x._version != last_version[0])
        last_version[0] = x._version
        return x.clone()

    pc = types.SimpleNamespace(
        timing_sets=sets,
        unseen_sets=[new],
        unseen_refs=[new[0].clone()],
        ref_model=lambda x: x.clone(),
        judge_set=lambda out, ref: Comparison(ok=True),
        ref_aliases_input=False,
    )
    host = types.SimpleNamespace(in_process=True, python_left=lambda: "")
    g = Guard(torch.device("cpu"), torch.float32, host, [], "", False)
    unseen_ms, seen_ms, _ = _unseen_round(Timer(torch.device("cpu")), pc, model, g, range(1), False)
    assert len(unseen_ms) == 1 and len(seen_ms) == 2
    assert seen_by_calls.index(7.0) == 1  # the second call (the timed one) is the first to see them
    assert seen_by_calls[0] == float(n_sets - 1)  # the call before it read the seen set's own contents
    assert seen_by_calls[2] == float(n_sets - 1)  # and so did the call after it
    if n_sets == 1:
        assert written_before == [True, True, True]
    assert len(pc.timing_sets) == n_sets and float(sets[-1][0][0]) == float(n_sets - 1)


def test_the_judge_refuses_a_reply_beyond_its_own_types_and_files_outside_its_folder(tmp_path):
    """The candidate's process writes its replies: the judge's unpickler builds the reply types alone, and an output
    spec naming a file outside the job's shared folder is refused before anything is opened or removed."""
    import pickle

    from kernelevolve.eval.worker import replies, shared
    from kernelevolve.eval.worker.checking import CandidateFailure
    from kernelevolve.eval.worker.host import Remote

    ok = ("ok", ([shared.Leaf("/x/t-1", torch.float32, (2,), (1,), 8)], 0.5, None, ""), torch.float16, torch.Size([2]))
    assert replies.loads(pickle.dumps(ok)) == ok
    for bad in (os.system, types.SimpleNamespace(a=1), subprocess.Popen):
        with pytest.raises(replies.Refused):
            replies.loads(pickle.dumps(("ok", bad)))
    victim = tmp_path / "t-victim"
    victim.write_bytes(b"\0" * 8)
    host = Remote(0, None, "", "", lambda stage: None)
    try:
        with pytest.raises(CandidateFailure, match="outside the shared folder"):
            host._copy([shared.Leaf(str(victim), torch.float32, (2,), (1,), 8)])
        assert victim.exists()
        mine, spec = shared.share([torch.ones(2)], host.folder)
        assert torch.equal(host._copy(spec)[0], torch.ones(2))
    finally:
        shutil.rmtree(host.folder, ignore_errors=True)


def test_the_judge_refuses_times_of_functions_its_timing_pass_never_asked_for(tmp_path):
    """GPU: the candidate's process runs the timing pass and sends its figures by name. A name it was not asked to
    time (a torch.compile baseline the judge never built, anything else) is refused: it would stand for a baseline
    no clock here ever saw, or for no field of the result."""
    from types import SimpleNamespace

    from kernelevolve.eval.worker.checking import CandidateFailure
    from kernelevolve.eval.worker.host import Remote
    from kernelevolve.eval.worker.series import Series
    from kernelevolve.eval.worker.timing import TimingStats

    host = Remote(0, None, "", "", lambda stage: None)
    try:
        st = TimingStats(1.0, 0.1, 10)
        pc = SimpleNamespace(timing_sets=[[torch.ones(2)]], compiled=None, min_bytes=8)
        host.key = lambda inputs: 0
        sent: dict = {}
        host.request = lambda kind, *args: sent[kind]
        sent["series"] = Series({"eager": st, "candidate": st}, {"eager": st}, {"candidate": None})
        assert host.measure(0, pc, False, None).stats["eager"] is st
        sent["retime_host"] = {"eager": st, "candidate": st}
        assert host.retime_host() == sent["retime_host"]
        for forged in (
            Series({"eager": st, "candidate": st, "compile": st}, {}, {}),  # no torch.compile baseline was asked
            Series({"eager": st, "candidate": st, "copy": st}, {}, {}),  # nor a copy floor
            Series({"eager": st, "candidate": st}, {"candidate_iqr": st}, {}),
            Series({"eager": st, "candidate": st}, {}, {"compile": st}),
        ):
            sent["series"] = forged
            with pytest.raises(CandidateFailure, match="not asked to time"):
                host.measure(0, pc, False, None)
        sent["series"] = Series({"eager": st, "candidate": st, "copy": st}, {}, {})
        host.measure(0, pc, True, None)  # asked for: a copy floor
        sent["retime_host"] = {"eager": st, "compile": st}
        with pytest.raises(CandidateFailure, match="not asked to time"):
            host.retime_host()
    finally:
        shutil.rmtree(host.folder, ignore_errors=True)


def test_the_judges_block_on_a_gpu_bounds_the_reported_time_and_checks_every_output(monkeypatch):
    """The proof block (eval/worker/proof.py) with its host scripted: K from the reported median, every output
    compared, the judge's clock over the block against the report (a graph replay: device time; calls launched
    one by one: the host-clock time, and a review note), and outputs finished after the clock stopped refused."""
    from types import SimpleNamespace

    from kernelevolve.eval.worker import proof
    from kernelevolve.eval.worker.checking import CandidateFailure
    from kernelevolve.eval.worker.correctness import compare

    assert proof.calls_for(0.005, 1000, 10**9) == proof.MAX_CALLS  # short calls: as many as allowed
    assert proof.calls_for(0.1, 1000, 10**9) == 10  # BLOCK_MS by the report
    assert proof.calls_for(0.4, 1000, 10**9) == proof.MIN_CALLS  # long calls: never fewer
    assert proof.calls_for(0.6, 1000, 10**9) == proof.MIN_LONG_CALLS  # calls that alone fill the block: two
    assert proof.calls_for(0.005, 10**9, 4 * 10**9) == 2  # memory bounds it (then too few: harness_limit)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (8 * 2**30, 16 * 2**30))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    ref_block = {"seen": 0.01, "fresh": 0.01}  # the reference's block here, ms a call

    def reference_block(pc, seen, fresh, mode, device):
        assert torch.equal(seen[0][0], pc.timing_sets[0][0])  # the timing set's contents, in a copy
        ref_block["calls"] = ref_block.get("calls", 0) + 1
        return ref_block["seen"], ref_block["fresh"]

    monkeypatch.setattr(proof, "reference_block", reference_block)

    class Host:
        """The candidate's process, scripted: its block writes ReLU into the slots it named (wrong: the last one
        off by one; late: after the judge's read inside its clock)."""

        in_process, measures = False, True

        def __init__(self, mode, per_call_ms, wrong=False, late=False, slots=None, work=None):
            self.mode, self.per_call_ms, self.wrong, self.late, self.n_slots = mode, per_call_ms, wrong, late, slots
            self.ended, self.bracket_ms = False, 0.05  # what a block's bracket costs by itself, its request and read
            self.block_overhead = proof.calibrate(self, torch.device("cpu"))
            self.work = work or (lambda i, inputs: torch.relu(inputs[0]))
            self.given = []  # the slots of each block where the judge gave its own

        def adopt_many(self, trees):
            return trees

        def forget_many(self, trees):
            pass

        def block(self, model, sets, slots=None):
            self.sets = sets
            if slots is not None:  # the judge's own: launched one by one
                self.slots = slots
                self.given.append(slots)
                return "plain", slots
            self.slots = [torch.empty_like(s[0]) for s in sets][: self.n_slots]
            return self.mode, self.slots

        def tick(self, read):
            return self.bracket_ms, read(), None

        def _work(self):
            for i, (slot, s) in enumerate(zip(self.slots, self.sets)):
                slot.copy_(self.work(i, s))
            if self.wrong:
                self.slots[-1] += 1.0

        def block_run(self, read):
            if not self.late:
                self._work()
            found = [t.clone() for t in read()]
            if self.late:
                self._work()
            per_call = self.per_call_ms.pop(0) if isinstance(self.per_call_ms, list) else self.per_call_ms
            return self.bracket_ms + per_call * len(self.sets), found, per_call * len(self.sets)

        def block_end(self):
            self.ended = True

    def pc():
        x = torch.randn(64)
        return SimpleNamespace(
            timing_sets=[[x]],
            timing_refs=[torch.relu(x)],
            unseen_sets=[],
            unseen_refs=[],
            unseen_used=0,
            fresh=lambda n: [([y], torch.relu(y)) for y in (torch.randn(64) for _ in range(n))],
            judge_set=lambda out, ref: compare(out, ref, 1e-5, 1e-5),
            ref_aliases_input=False,
        )

    def judged(host, claim=0.01, host_ms=None):
        g = SimpleNamespace(host=host, device=torch.device("cuda"), review=[], protected=[], ran=lambda *n: None)
        g.part = lambda name: contextlib.nullcontext()
        cr = _case(t_candidate_ms=claim, t_candidate_host_ms=host_ms)
        try:
            proof.check_block(pc(), 0, cr, g)
        finally:
            assert host.ended  # the candidate's process lets the block go, whatever the verdict
        return cr, g

    cr, g = judged(Host("graph", 0.009))  # a replay no slower than the report: honest
    assert cr.timing.candidate.unseen_ms == pytest.approx(0.009) and not g.review
    assert "calls" not in ref_block  # within the bound as it stands: the reference's drift, which widens it, unasked
    cr, g = judged(Host("graph", 0.013), claim=0.006)  # tiny kernels: a graph's cost per kernel
    with pytest.raises(CandidateFailure, match="or the reported times are not the calls'"):
        judged(Host("graph", 0.15), claim=0.05)  # three times the report: shrunk, or a cache's misses
    with pytest.raises(CandidateFailure, match="output on inputs it had not seen is wrong"):
        judged(Host("graph", 0.009, wrong=True))
    # Replying at once and writing the outputs afterwards (a later request, a thread, work still queued): the
    # judge's read inside its clock saw them unwritten.
    with pytest.raises(CandidateFailure, match="changed after its clock stopped"):
        judged(Host("graph", 0.0, late=True), claim=0.001)
    # The bracket's own cost is what it was before the candidate loaded: a process that stretches it later (its
    # replies slower) gains nothing from it.
    stretched = Host("graph", 0.15)
    stretched.bracket_ms = 3.0
    with pytest.raises(CandidateFailure, match="or the reported times are not the calls'"):
        judged(stretched, claim=0.05)
    assert proof.Overhead(0.1, 0.4, 4).ms(1) == pytest.approx(0.1)
    assert proof.Overhead(0.1, 0.4, 4).ms(7) == pytest.approx(0.7)  # linear in the outputs read, past the range too
    with pytest.raises(CandidateFailure, match="outputs for a block of"):
        judged(Host("graph", 0.009, slots=3))
    # Work that depends on the values: the reference's block on the new contents is slower alike, and the bound
    # follows it (at most MAX_WORK_DRIFT); the same calls with the reference unmoved are a cache's misses.
    ref_block.update(fresh=0.018)
    judged(Host("graph", 0.12), claim=0.05)
    assert ref_block["calls"] >= 1
    ref_block.update(fresh=0.01)
    with pytest.raises(CandidateFailure, match="device time"):
        judged(Host("graph", 0.12), claim=0.05)
    # Once the candidate is loaded the bracket costs more than calibrated before (the graph's launch, the two
    # processes' wake-ups): BLOCK_SLACK_MS over the whole block is allowed for it, no more.
    loaded = Host("graph", 0.143)  # 7 calls, 1.0 ms by the report
    loaded.bracket_ms += 0.55
    judged(loaded, claim=0.143)
    loaded.bracket_ms += 0.2
    with pytest.raises(CandidateFailure, match="device time"):
        judged(loaded, claim=0.143)
    # Outputs whose shapes follow the values, and jagged input sets: no memory can be named before the calls, and
    # no call can warm up on the block's buffers. The judge gives outputs of its own, shaped as each reference, and
    # buffers shaped as each new set; the calls are launched one by one, bounded by the host-clock time, and listed
    # for review. A first block slower than the bound (a kernel compiled for a shape class first seen there) is
    # followed by a second on sets never shown; only that one's verdict stands, so a cache misses twice.
    varying = pc()
    varying.fresh = lambda n: [([y], torch.relu(y)[: 1 + i]) for i, y in enumerate(torch.randn(64) for _ in range(n))]
    jagged = pc()
    jagged.timing_sets = [[torch.randn(64)], [torch.randn(65)]]
    jagged.fresh = lambda n: [([y], torch.relu(y)) for y in (torch.randn(60 + i) for i in range(n))]

    def on(case, host):
        g = SimpleNamespace(host=host, device=torch.device("cuda"), review=[], protected=[])
        g.ran, g.part = (lambda *n: None), (lambda name: contextlib.nullcontext())
        cr = _case(t_candidate_ms=0.01)
        proof.check_block(case, 0, cr, g)
        return cr, g

    for case, work in ((varying, lambda i, s: torch.relu(s[0])[: 1 + i]), (jagged, None)):
        for per_call, verdict in (([0.009], None), ([0.5, 0.009], None), ([0.5, 0.5], "host-clock time")):
            host = Host("graph", list(per_call), work=work)
            if verdict:
                with pytest.raises(CandidateFailure, match=verdict):
                    on(case, host)
            else:
                cr, g = on(case, host)
                assert cr.timing.candidate.unseen_ms == pytest.approx(0.009) and "launched one by one" in g.review[0]
            assert host.ended and len(host.given) == len(per_call)
            refs = [(work or host.work)(i, s) for i, s in enumerate(host.sets)]
            assert [t.shape for t in host.given[-1]] == [t.shape for t in refs]  # each shaped as its reference
    with pytest.raises(CandidateFailure, match="output on inputs it had not seen is wrong"):
        on(jagged, Host("graph", 0.009, wrong=True))
    # Calls launched one by one pay their host time (threads started and joined in each call): bounded by it.
    cr, g = judged(Host("plain", 0.45), claim=0.004, host_ms=0.44)
    assert "not the device time reported" in g.review[0]
    with pytest.raises(CandidateFailure, match="host-clock time"):
        judged(Host("plain", 1.2), claim=0.004, host_ms=0.44)
    # The host's share of such a call (its host-clock median less the device time reported) may take HOST_FACTOR
    # times as long: host-bound code measures that far apart within one process (batch_event_truncate's seed:
    # 0.44 ms a call in the block against 0.28 ms host-clock, rejected at 1.25x). The device time reported may
    # not grow by more than FACTOR: a call whose device work exceeds the report is rejected as before.
    judged(Host("plain", 0.44), claim=0.05, host_ms=0.28)
    with pytest.raises(CandidateFailure, match="host-clock time"):
        judged(Host("plain", 0.55), claim=0.25, host_ms=0.28)
    # Each output of a call launched one by one is a copy of its own to launch.
    assert proof._leaves_per_call([(torch.zeros(1),) * 3] * 4) == 3


def test_the_samplers_places_and_a_spoiled_output():
    """NaN in floating outputs and random integers elsewhere, so an unwritten output reads as such; the sampler
    reads SAMPLES places of each output (all of a smaller one) and compares bits, NaN included."""
    from kernelevolve.eval.worker import proof

    outs = [torch.zeros(5000), torch.zeros(10, dtype=torch.int64), torch.zeros(0)]
    proof.spoil(outs)
    assert torch.isnan(outs[0]).all() and outs[1].ne(0).any()
    sampler = proof.Sampler(outs, torch.device("cpu"))
    assert [len(p) for p in sampler.places] == [proof.SAMPLES, 10]
    taken = [t.clone() for t in sampler.read()]
    assert sampler.agrees(taken, [o.clone() for o in outs])  # NaN equals itself bit for bit
    assert torch.equal(sampler.places[1], torch.arange(10))  # a small output is read whole
    later = [o.clone() for o in outs]
    later[1][3] += 1
    assert not sampler.agrees(taken, later)
    later = [o.clone() for o in outs]
    later[0][int(sampler.places[0][0])] = 0.0
    assert not sampler.agrees(taken, later)


def test_a_cpu_case_is_timed_again_after_a_failed_cross_check_or_a_busy_pass_and_not_otherwise():
    """The second timing pass (harness._second_pass): a timing cross-check failure earns one more pass (a request's
    cost varies from pass to pass on a shared host; a forged clock fails both), as does a busy pass that passed or
    failed the unseen-inputs check with sets never shown left; any other failure stands at once."""
    from types import SimpleNamespace

    from kernelevolve.eval.worker.checking import CandidateFailure
    from kernelevolve.eval.worker.harness import _second_pass
    from kernelevolve.result import Status

    def failure(reason: str) -> CandidateFailure:
        return CandidateFailure(Status.REJECTED, reason)

    quiet, busy = SimpleNamespace(note=lambda: ""), SimpleNamespace(note=lambda: "its threads waited for a CPU")
    fresh, spent = (
        SimpleNamespace(unseen_sets=[1, 2, 3], unseen_used=2),
        SimpleNamespace(unseen_sets=[1], unseen_used=1),
    )
    cross = failure("timing cross-check: the candidate's process reported 0.07 ms per call of candidate (median)")
    assert _second_pass(spent, cross, quiet) == cross.reason
    assert _second_pass(fresh, None, quiet) == ""
    assert _second_pass(fresh, None, busy) == "its threads waited for a CPU"
    unseen = failure("unseen-inputs check: calls on inputs it had not seen took 1 ms")
    assert _second_pass(fresh, unseen, busy) == "its threads waited for a CPU"
    assert _second_pass(spent, unseen, busy) == ""
    assert _second_pass(fresh, unseen, quiet) == ""
    assert _second_pass(fresh, failure("threads check: after a timed call, a thread"), busy) == ""


def test_the_cross_check_s_slack_follows_the_host_s_request_spread_within_its_cap():
    """An honest 0.03 ms OpenMP call on a VM whose request costs 0.05-0.1 ms saw every bracket 0.11 ms over its
    report: the slack is the measured spread of a request's cost (twice it) where that is more than 0.05 ms, at
    most 0.25 ms; the candidate's time is floored at the judge's bracket whatever the slack."""
    from types import SimpleNamespace

    from kernelevolve.eval.worker.host import CROSS_CHECK_SLACK_MAX_MS, RemoteFn

    def fn(jitter_ms: float) -> RemoteFn:
        host = SimpleNamespace(empty_ms=0.04, jitter_ms=jitter_ms)
        remote = RemoteFn(host, model=0)
        remote.brackets, remote.claimed, remote.empty = [0.15, 0.16, 0.17], [0.0277] * 3, [0.045]
        return remote

    assert "timing cross-check" in fn(0.0).cross_check("candidate")  # 0.11 ms seen > 1.5 x 0.0277 + 0.05
    assert fn(0.05).cross_check("candidate") == ""  # + 0.1: within what this host resolves
    assert fn(1.0).slack_ms() == CROSS_CHECK_SLACK_MAX_MS
    forged = fn(1.0)
    forged.brackets = [1.0, 1.1, 1.2]
    assert "timing cross-check" in forged.cross_check("candidate")  # a report a tenth of the call: forged
    assert fn(0.05).floor_ms() == pytest.approx((0.15 - 0.04) / 1.5)  # the time taken, whatever the slack
