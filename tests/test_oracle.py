"""The measured correctness rule, in process: the float64 oracle, the budget it measures, and the verdicts of
honest reorderings and of wrong kernels on every input distribution."""

from __future__ import annotations

import types

import pytest
import torch

from kernelevolve.eval.worker import memory
from kernelevolve.eval.worker.correctness import KERNELBENCH, Criterion
from kernelevolve.eval.worker.oracle import BUDGET_MULTIPLE, Float64Reference, unit_roundoff
from kernelevolve.problem.inputs import DISTRIBUTIONS, build_inputs

CPU = torch.device("cpu")
MEASURED = Criterion("measured", 1e-4, 1e-4, BUDGET_MULTIPLE)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _inputs(shape: tuple[int, ...], distribution: str, seed: int = 0) -> list[torch.Tensor]:
    module = types.ModuleType("p")
    module.get_inputs = lambda: [torch.randn(shape)]
    return build_inputs(module, seed, distribution, torch.float32, CPU)


def _verdict(fn, candidate, inputs, criterion=MEASURED, allow_tf32=False, seed=1):
    model = Fn(fn)
    with torch.no_grad():
        ref = model(*inputs)
        oracle = Float64Reference(model, torch.float32, unit_roundoff(torch.float32, allow_tf32)).measure(
            inputs, ref, seed
        )
        assert not isinstance(oracle, str), oracle
        return criterion.check(candidate(*inputs), ref, oracle=oracle)


def _blocked_sum(x: torch.Tensor, block: int = 512) -> torch.Tensor:
    """float32 partial sums per block, then the partials summed in order (a GPU kernel's loop over blocks)."""
    parts = x.reshape(*x.shape[:-1], -1, block).sum(-1)
    acc = torch.zeros(x.shape[:-1])
    for k in range(parts.shape[-1]):
        acc = acc + parts[..., k]
    return acc


def _tree_sum(x: torch.Tensor) -> torch.Tensor:
    while x.shape[-1] > 1:
        x = x[..., 0::2] + x[..., 1::2]
    return x[..., 0]


def _blocked_cumsum(x: torch.Tensor, block: int = 256) -> torch.Tensor:
    """A scan per block and the blocks' carries added afterwards (a decoupled-lookback scan's arithmetic)."""
    inner = torch.cumsum(x.reshape(*x.shape[:-1], -1, block), -1)
    totals = inner[..., -1]
    carry = torch.cumsum(totals, -1) - totals
    return (inner + carry[..., None]).reshape(x.shape)


def _hillis_steele(x: torch.Tensor) -> torch.Tensor:
    """The log-step parallel scan: a different association of every prefix."""
    out, step = x.clone(), 1
    while step < x.shape[-1]:
        shifted = torch.nn.functional.pad(out[..., :-step], (step, 0))
        out = out + shifted
        step *= 2
    return out


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """Round to TF32's 10 stored mantissa bits, as tensor cores read float32 operands."""
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


SUM = lambda x: x.sum(-1)  # noqa: E731
CUMSUM = lambda x: torch.cumsum(x, -1)  # noqa: E731


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_honest_reorderings_of_long_reductions_and_scans_are_accepted(distribution):
    reduce_in = _inputs((64, 16384), distribution)
    scan_in = _inputs((8, 8192), distribution)
    honest = {
        (SUM, "blocked"): _blocked_sum,
        (SUM, "tree"): _tree_sum,
        (SUM, "float64 accumulation"): lambda x: x.double().sum(-1).float(),
        (CUMSUM, "blocked"): _blocked_cumsum,
        (CUMSUM, "log-step"): _hillis_steele,
        (CUMSUM, "float64 accumulation"): lambda x: torch.cumsum(x.double(), -1).float(),
    }
    for (fn, name), candidate in honest.items():
        inputs = reduce_in if fn is SUM else scan_in
        cmp = _verdict(fn, candidate, inputs)
        assert cmp.ok, (distribution, name, cmp.reason)
        assert cmp.error_ratio is not None and cmp.error_ratio <= BUDGET_MULTIPLE


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_wrong_results_are_rejected_on_every_distribution(distribution):
    reduce_in = _inputs((64, 16384), distribution)
    scan_in = _inputs((8, 8192), distribution)
    wrong = {
        (SUM, "one part in a thousand"): lambda x: x.sum(-1) * (1 + 1e-3),
        (SUM, "bfloat16 reduction"): lambda x: x.bfloat16().sum(-1).float(),
        (CUMSUM, "one part in a thousand"): lambda x: torch.cumsum(x, -1) * (1 + 1e-3),
        (CUMSUM, "off-by-one (exclusive) scan"): lambda x: torch.cumsum(x, -1) - x,
        (CUMSUM, "bfloat16 scan"): lambda x: torch.cumsum(x.bfloat16().float(), -1),
    }
    for (fn, name), candidate in wrong.items():
        inputs = reduce_in if fn is SUM else scan_in
        cmp = _verdict(fn, candidate, inputs)
        assert not cmp.ok, (distribution, name)
        assert "the reference's own rounding error" in cmp.reason and f"limit {BUDGET_MULTIPLE:g}x" in cmp.reason


def test_one_wrong_element_and_constant_outputs_are_rejected():
    (x,) = _inputs((32, 1024), "normal")

    def one_off(x):
        out = torch.softmax(x, -1)
        out[3, 7] *= 1.001
        return out

    softmax = lambda x: torch.softmax(x, -1)  # noqa: E731
    assert "1 of 32768 elements" in _verdict(softmax, one_off, [x]).reason
    assert not _verdict(softmax, lambda x: torch.zeros_like(x), [x]).ok
    assert not _verdict(softmax, lambda x: torch.full_like(x, 1 / 1024), [x]).ok
    tiny = lambda x: x * 1e-7  # noqa: E731  every element far below the fixed atol of 1e-4
    assert not _verdict(tiny, lambda x: torch.zeros_like(x), [x]).ok
    assert _verdict(tiny, lambda x: x / 1e7, [x]).ok


def test_tf32_is_rejected_by_default_and_accepted_when_allowed():
    a, b = _inputs((128, 2048), "given")[0], _inputs((2048, 128), "given", seed=1)[0]
    positive = [a.abs(), b.abs()]  # no cancellation: TF32's error is closest to float32's here
    matmul = lambda a, b: a @ b  # noqa: E731
    tf32 = lambda a, b: _tf32(a) @ _tf32(b)  # noqa: E731
    split_k = lambda a, b: a[:, :1024] @ b[:1024] + a[:, 1024:] @ b[1024:]  # noqa: E731
    for inputs in ([a, b], positive):
        assert _verdict(matmul, split_k, inputs).ok
        default = _verdict(matmul, tf32, inputs)
        assert not default.ok and default.error_ratio > 2 * BUDGET_MULTIPLE
        assert _verdict(matmul, tf32, inputs, allow_tf32=True).ok


def test_large_logits_leave_room_for_any_correct_ordering():
    (x,) = _inputs((64, 2048), "large")

    def two_pass(x):
        e = torch.exp(x - x.max(-1, keepdim=True).values)
        return e * (1.0 / e.sum(-1, keepdim=True))

    assert _verdict(lambda x: torch.softmax(x, -1), two_pass, [x]).ok


def test_the_oracle_is_never_changed_by_a_comparison():
    (x,) = _inputs((16, 512), "normal")
    model = Fn(lambda x: torch.cumsum(x, -1))
    ref = model(x)
    oracle = Float64Reference(model, torch.float32, 2**-24).measure([x], ref, 0)
    before = oracle.exact.clone()
    for _ in range(2):
        assert MEASURED.check(ref, ref, oracle=oracle).ok
    assert torch.equal(oracle.exact, before)
    assert torch.equal(Fn(lambda x: torch.cumsum(x, -1))(x), ref)  # inputs untouched by the perturbed run


def test_parameters_are_restored_after_the_perturbed_run():
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 32)
    reference64 = Float64Reference(linear, torch.float32, 2**-24)
    weights = reference64.model.weight.detach().clone()
    (x,) = _inputs((8, 64), "normal")
    first = reference64.measure([x], linear(x).detach(), 0)
    assert torch.equal(reference64.model.weight, weights)
    second = reference64.measure([x], linear(x).detach(), 0)
    assert torch.equal(first.exact, second.exact)


def test_whole_number_inputs_are_not_perturbed():
    ids = torch.arange(1000, dtype=torch.float32).reshape(10, 100)
    model = Fn(lambda t: (t.long() % 7).to(t.dtype))  # a function of the integer part: exact under any honest kernel
    oracle = Float64Reference(model, torch.float32, 2**-24).measure([ids], model(ids), 0)
    assert oracle.budgets[0].abs_err == 0.0  # a perturbed 3.0 would have truncated to 2


def test_a_reference_that_fixes_its_own_precision_has_no_oracle():
    model = Fn(lambda x: (x.float() * 2).sum(-1))
    (x,) = _inputs((4, 8), "normal")
    why = Float64Reference(model, torch.float32, 2**-24).measure([x], model(x), 0)
    assert isinstance(why, str) and "its own precision" in why
    assert "float64 already" in Float64Reference(model, torch.float64, 2**-53).why


def test_integer_and_tuple_outputs_keep_their_rules():
    (x,) = _inputs((16, 256), "normal")
    fn = lambda x: (x.sum(-1), x.argmax(-1))  # noqa: E731
    assert _verdict(fn, lambda x: (_tree_sum(x), x.argmax(-1)), [x]).ok
    wrong_index = _verdict(fn, lambda x: (x.sum(-1), x.argmax(-1) + 1), [x])
    assert not wrong_index.ok and "output 1" in wrong_index.reason


def test_timing_sets_are_judged_with_the_budget_against_the_working_reference():
    (x,) = _inputs((64, 16384), "given")
    model = Fn(SUM)
    ref = model(x)
    budgets = Float64Reference(model, torch.float32, 2**-24).measure([x], ref, 0).budgets
    (y,) = _inputs((64, 16384), "given", seed=5)
    assert MEASURED.check(_blocked_sum(y), SUM(y), budgets=budgets).ok
    assert not MEASURED.check(SUM(y) * (1 + 1e-3), SUM(y), budgets=budgets).ok


def test_kernelbench_rule_is_allclose_at_one_percent():
    ref = torch.ones(1000)
    assert KERNELBENCH.check(ref * 1.005, ref).ok
    assert not KERNELBENCH.check(ref * 1.03, ref).ok
    tiny = torch.full((1000,), 1e-4)
    assert KERNELBENCH.check(torch.zeros(1000), tiny).ok  # no norm check: KernelBench accepts this too
    assert not MEASURED.check(torch.zeros(1000), tiny).ok  # the fixed fallback keeps its norm check


def test_the_memory_plan_keeps_what_does_not_fit_on_the_host(monkeypatch):
    from kernelevolve.eval.worker import memory

    gpu = torch.device("cuda", 0)  # only the plan's arithmetic: no device is touched
    monkeypatch.setattr(memory, "free_bytes", lambda device: 100 * 10**9)
    monkeypatch.setattr(memory, "host_available", lambda: 10**15)
    roomy = memory.make_plan(gpu, 10**9, 2 * 10**9, trials=3, timing_sets=3, unseen_sets=4)
    assert (roomy.timing_sets, roomy.trials_on_host, roomy.unseen_on_host) == (3, False, False)
    # KernelBench's softmax at its own size: 12.9 GB per set, its float64 result 12.9 GB more
    big = memory.make_plan(gpu, 12_900_000_000, 12_900_000_000, trials=3, timing_sets=3, unseen_sets=4)
    assert big.timing_sets == 1 and big.trials_on_host and big.unseen_on_host  # the checks' room before timing sets
    assert "trials on the host" in big.describe() and "1 timing set" in big.describe()
    # 2 GB per set (KernelBench's 1 GB inputs with 1 GB outputs): everything on the device, room for the block
    kb = memory.make_plan(gpu, 2 * 10**9, 2 * 10**9, trials=3, timing_sets=3, unseen_sets=4)
    assert (kb.timing_sets, kb.trials_on_host, kb.unseen_on_host) == (3, False, False)
    assert 3 * 4 + 8 + kb.timing_sets * 2 + memory.BLOCK_ROOM_SETS * 2 <= 50  # GB: within the 50 GB budget
    monkeypatch.setenv(memory.SHARE_VARIABLE, "0.01")
    tight = memory.make_plan(gpu, 12_900_000_000, 0, trials=3, timing_sets=3, unseen_sets=4)
    assert tight.timing_sets == 1  # never fewer than one: the timing sets must live on the device
    monkeypatch.setenv(memory.SHARE_VARIABLE, "2")
    with pytest.raises(ValueError, match="fraction"):
        memory.make_plan(gpu, 1, 0, trials=1, timing_sets=1, unseen_sets=1)
    assert memory.make_plan(CPU, 10**9, 0, trials=3, timing_sets=3, unseen_sets=4).budget == 0
    monkeypatch.delenv(memory.SHARE_VARIABLE)
    monkeypatch.setattr(memory, "host_available", lambda: 128 * 10**9)  # the H200 machine's host
    # RMSNorm at its own size: 15 GB per set, 15 GB float64 result; the host holds the trials, one unseen set more
    rms = memory.make_plan(gpu, 15 * 10**9, 15 * 10**9, trials=2, timing_sets=3, unseen_sets=4)
    assert rms.trials_on_host and rms.unseen_sets == 0 and "0 unseen sets on the host" in rms.describe()
    assert rms.trials == 2
    # three asked: the host holds two (the case runs those and says so); none held is the harness's limit
    fewer = memory.make_plan(gpu, 15 * 10**9, 15 * 10**9, trials=3, timing_sets=3, unseen_sets=4)
    assert (fewer.trials, fewer.unseen_sets) == (2, 0)
    assert roomy.trials == 3 and big.trials == 3
    monkeypatch.setattr(memory, "host_available", lambda: 50 * 10**9)
    with pytest.raises(memory.HarnessLimit, match="one trial needs 30 GB"):
        memory.make_plan(gpu, 15 * 10**9, 15 * 10**9, trials=3, timing_sets=3, unseen_sets=4)
    assert big.unseen_sets == 4


def test_a_case_runs_the_trials_its_plan_holds_and_says_so():
    import random

    from kernelevolve.eval.wire import EvalJob
    from kernelevolve.eval.worker import prepare

    class Settle:  # the plan made from the first trial's sizes holds two trials
        first: dict = {}

        def __call__(self, trial):
            self.first["plan"] = memory.MemoryPlan(trials=2)

    module = types.ModuleType("p")
    module.get_inputs = lambda: [torch.randn(8)]
    job = EvalJob(problem_path="p.py", candidate_path="c.py", target="cpu", seed=0, trials=3)
    rng, clock = random.Random(0), prepare.LoadClock(CPU)
    trials, notes = prepare._trials(
        job, module, Fn(torch.relu), DISTRIBUTIONS, torch.float32, CPU, rng, clock, Settle()
    )
    assert len(trials) == 2
    assert notes == ["2 of 3 trials: the host cannot hold more at these sizes"]


def test_a_trial_on_the_host_is_resident_only_inside_the_block():
    from kernelevolve.eval.worker import memory
    from kernelevolve.eval.worker.prepare import Trial

    x = torch.randn(4, 8)
    trial = Trial("given", [x, 3], x * 2, on_host=True)
    with memory.resident(trial, torch.device("meta")):
        assert trial.inputs[0].device.type == "meta" and trial.inputs[1] == 3
        assert trial.reference.device.type == "meta"
    assert trial.inputs[0] is x and trial.reference.device.type == "cpu"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_outputs_get_one_ulp_not_sixteen(dtype):
    """The ulp floor is added to the limit, not multiplied: multiplied, a bfloat16 softmax 20% off passed."""
    x = torch.randn(64, 4096).to(dtype)
    model = Fn(lambda x: torch.softmax(x, -1))
    ref = model(x)
    oracle = Float64Reference(model, dtype, unit_roundoff(dtype, False)).measure([x], ref, 1)
    honest = torch.softmax(x.float(), -1).to(dtype)  # float32 inside, rounded once
    assert MEASURED.check(honest, ref, oracle=oracle).ok
    assert not MEASURED.check((ref.double() * 1.1).to(dtype), ref, oracle=oracle).ok


def test_a_device_held_by_other_processes_is_the_harness_limit_not_the_candidate():
    """On the H200 a process outside the evaluation held 105 of the device's 140 GB, and four honest drafts were
    'crashed' by an out-of-memory error they did not cause."""
    from kernelevolve.eval.evaluator import Evaluator
    from kernelevolve.eval.wire import EvalJob
    from kernelevolve.result import Status

    gb = 10**9
    assert memory.others_note(3 * gb, 140 * gb) == ""  # spare workers' contexts: nothing to say
    unknown = "who held it is not known: the evaluator could not read NVML"
    assert memory.others_note(105 * gb, 140 * gb) == f"other processes held 105 GB of the device's 140 GB ({unknown})"
    holders = {"spare workers": [2, 1 * gb], "another job's processes": [1, 104 * gb]}
    assert memory.others_note(105 * gb, 140 * gb, holders) == (
        "other processes held 105 GB of the device's 140 GB (spare workers: 2 processes, 1 GB; another job's "
        "processes: 1 process, 104 GB)"
    )
    assert memory.out_of_memory_limit(30 * gb, 140 * gb) == ""  # the candidate had most of the device
    reason = memory.out_of_memory_limit(105 * gb, 140 * gb)
    assert reason.startswith("harness limit") and "105 GB" in reason and "not the candidate's doing" in reason

    class Worker:  # a worker whose candidate phase hit that error
        started, last_stage = 0.0, "correctness case 0"

        def __init__(self):
            self.events = [{"event": "ready", "t": 0.0}, {"event": "harness_limit", "message": reason}]

        def next_event(self, deadline):
            return self.events.pop(0)

        def send_job(self, job):
            pass

        def log_tail(self):
            return ""

    job = EvalJob(problem_path="p.py", candidate_path="c.py", target="cpu", seed=0)
    result = Evaluator("cpu")._run(Worker(), job)
    assert result.status == Status.HARNESS_LIMIT and result.reason == reason


def test_an_out_of_memory_error_the_candidate_did_not_cause_is_the_harness_limit(monkeypatch):
    """A candidate whose own demand fits the part of the device the harness leaves it is not to blame when the
    device runs short (the harness's sets and other processes held the rest); one that asks for more is."""
    from kernelevolve.eval.worker.checking import failure_of
    from kernelevolve.result import Status

    gib = 2**30
    held = {"reserved": 2 * gib}
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: held["reserved"])
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (1 * gib, 80 * gib))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    e = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 80 GiB")
    failed = failure_of(e, "forward raised")
    assert failed.status == Status.HARNESS_LIMIT
    assert failed.reason.startswith("harness limit") and "asked for 4.29 GB more" in failed.reason
    assert "forward raised OutOfMemoryError" in failed.reason
    held["reserved"] = 50 * gib  # beyond the 40 GiB a candidate is left: its own doing
    assert failure_of(e, "forward raised").status == Status.RUNTIME_ERROR
    assert failure_of(RuntimeError("boom"), "forward raised").status == Status.RUNTIME_ERROR


def test_the_unseen_inputs_block_is_never_skipped_for_want_of_room(monkeypatch):
    from types import SimpleNamespace

    from kernelevolve.eval.worker import proof
    from kernelevolve.eval.worker.checking import CandidateFailure
    from kernelevolve.result import CaseResult, Status

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10**9, 80 * 10**9))
    pc = SimpleNamespace(timing_sets=[[torch.zeros(2**27)]], timing_refs=[torch.zeros(2**27)])  # 1 GB a set
    g = SimpleNamespace(device=torch.device("cuda", 0))
    with pytest.raises(CandidateFailure) as caught:
        proof.check_block(pc, None, CaseResult(shape={}, correct=True, t_candidate_ms=5.0), g)
    assert caught.value.status == Status.HARNESS_LIMIT and "unseen-inputs check needs" in caught.value.reason
