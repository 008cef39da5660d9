"""Issue 45, class 3: calls the candidate could tell apart. Timed, checked and unseen-input calls once came through
requests of their own kinds, so a stack walk or the request's kind told the candidate which calls were timed, and
a cache served them (41x on a matrix product that runs at 1.0x). Every call now comes through one request and one
path in the candidate's process, and a few timed calls, chosen by the judge, run on contents never shown before,
their outputs judged and their times held against the pass's (docs/harness.md, "Calls alike")."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from kernelevolve.eval.worker import sampled
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


def _jagged(total: int, seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    cuts = torch.sort(torch.randint(0, total + 1, (3,), generator=gen)).values
    return [torch.randn(total, 2, generator=gen), torch.cat([torch.tensor([0]), cuts, torch.tensor([total])])]


def test_new_floats_keep_a_jagged_sets_layout():
    """The layout (integer leaves) stays the seen set's, every floating leaf takes the new draw's values (repeated
    to its size; kept sorted where it was); no floating leaf to renew, or none to take from: None."""
    seen, drawn = _jagged(5, 0), _jagged(3, 1)
    mixed = sampled.new_floats(seen, drawn)
    assert torch.equal(mixed[1], seen[1]) and mixed[0].shape == seen[0].shape
    assert torch.equal(mixed[0].reshape(-1), drawn[0].reshape(-1).repeat(2)[:10])
    borders = [torch.tensor([0.1, 0.5, 0.9]), torch.tensor([3])]
    renewed = sampled.new_floats(borders, [torch.tensor([0.7, 0.2]), torch.tensor([1])])
    assert torch.equal(renewed[0], torch.tensor([0.2, 0.7, 0.7])) and torch.equal(renewed[1], borders[1])
    assert sampled.new_floats([seen[1]], [drawn[1]]) is None
    assert sampled.new_floats(seen, [torch.empty(0, 2), drawn[1]]) is None


class _Host:
    """The judge's end of the candidate's process, as far as the sampler uses it: what it was handed, and when."""

    def __init__(self) -> None:
        self.adopted: list[list[torch.Tensor]] = []
        self.forgotten: list[object] = []

    def adopt(self, tree):
        self.adopted.append([t.clone() for t in tree])  # the contents it holds when handed over
        return tree

    def forget(self, tree) -> None:
        self.forgotten.append(tree)


def _sampler(floats_free: bool) -> tuple[sampled.TimedSampler, SimpleNamespace, _Host]:
    sets = [_jagged(6, 2), _jagged(7, 3)]
    draws = iter([_jagged(4, 4)])
    pc = SimpleNamespace(
        timing_sets=sets,
        unseen_sets=[_jagged(5, 5), _jagged(5, 6)],
        fresh=lambda n: [(d, d[0].sum()) for d in [next(draws)]],
        floats_free=floats_free,
        ref_model=lambda values, offsets: values.sum(),
    )
    host = _Host()
    g = SimpleNamespace(host=host, device=torch.device("cpu"), ran=lambda name: None)
    sampler = sampled.TimedSampler(pc, g, {})
    sampler.picked = {1}
    return sampler, pc, host


def test_a_sampled_jagged_call_takes_new_floats_in_its_own_buffers():
    sampler, pc, host = _sampler(floats_free=True)
    seen = [t.clone() for t in pc.timing_sets[1]]
    assert sampler.before(1, 10, pc.timing_sets[1]) is None and not host.adopted
    values, offsets = pc.timing_sets[1]
    assert torch.equal(offsets, seen[1]) and not torch.equal(values, seen[0])
    assert float(sampler.ref) == pytest.approx(float(values.sum()))
    sampler.restore()
    assert all(torch.equal(a, b) for a, b in zip(pc.timing_sets[1], seen))


def test_a_sampled_jagged_call_without_redrawable_floats_gets_buffers_of_the_new_sets_layout():
    """Where the problem's floats may not be redrawn (INPUT_DISTRIBUTIONS "given" alone), the new draw goes into
    buffers shaped as it, handed to the candidate's process empty, then filled; they take the iteration's place for
    its calls and are let go before the next."""
    sampler, pc, host = _sampler(floats_free=False)
    swapped = sampler.before(1, 10, pc.timing_sets[1])
    assert swapped is not None and swapped[0].shape == (4, 2)
    assert len(host.adopted) == 1 and not any(t.any() for t in host.adopted[0])
    assert all(torch.equal(a, b) for a, b in zip(swapped, _jagged(4, 4)))
    assert sampler.before(2, 10, pc.timing_sets[0]) is None and host.forgotten == [swapped]


def test_an_honest_jagged_kernel_passes_sampled_calls_in_buffers_of_their_own(cpu_evaluator):
    """Buffers handed to the candidate's process in the middle of the timing pass, used for one iteration's calls
    and let go: an honest kernel is judged right there and its timings stand."""
    result = cpu_evaluator.evaluate(
        load_problem(HERE / "problems" / "jagged_sum_given.py"),
        HERE / "honest" / "jagged_sum_segment_reduce.py",
        **FAST_TIMING,
    )
    if host_was_busy(result):
        return
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert "unseen_inputs" in result.checks and result.speedup
