"""The judge and the candidate's process (cpu target): tensors both map, and what the judge says when the
candidate's process dies."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.worker import shared
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.conftest import FIXTURES

KILLS_ITSELF = """
import os, signal
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os.kill(os.getpid(), signal.SIGKILL)
        return torch.relu(x)
"""


def test_a_shared_tree_keeps_values_layouts_and_structure_and_one_side_sees_the_other_write(tmp_path):
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    tree = [
        base,
        base.t(),  # strides kept
        torch.ones(1, 4).expand(3, 4),  # overlapping: copied contiguous
        {"ids": torch.tensor([3, 1, 2]), "n": 7},
        (torch.empty(0), 2.5),
    ]
    mine, spec = shared.share(tree, str(tmp_path))
    theirs = shared.open_spec(spec)
    for a, b, c in zip(*(t for t in map(_leaves, (tree, mine, theirs)))):
        assert torch.equal(a, b) and torch.equal(a, c) and a.dtype == c.dtype
    assert mine[1].stride() == base.t().stride() == theirs[1].stride()
    assert theirs[3]["n"] == 7 and theirs[4][1] == 2.5
    mine[0].add_(100)  # the judge's write, as a rotation of the timing sets
    assert torch.equal(theirs[0], base + 100)
    shared.release(spec)
    assert not list(tmp_path.iterdir())
    assert torch.equal(theirs[0], base + 100)  # a mapping outlives its file


def _leaves(tree):
    from kernelevolve.eval.worker import trees

    return trees.tensors(tree)


def test_a_candidate_process_killed_by_a_signal_is_a_crash_the_judge_names(tmp_path):
    candidate = tmp_path / "kills_itself.py"
    candidate.write_text(KILLS_ITSELF)
    with Evaluator("cpu", timeout_s=120) as ev:
        result = ev.evaluate(load_problem(FIXTURES / "kb_relu.py"), candidate, trials=1)
        assert result.status is Status.CRASHED, (result.reason, result.log_tail[-1500:])
        assert "the candidate's process was killed by SIGKILL" in result.reason
        after = ev.evaluate(load_problem(FIXTURES / "kb_relu.py"), FIXTURES / "candidates" / "relu_ok.py", trials=1)
        assert after.status is Status.OK, after.reason


def test_the_candidate_processs_block_writes_each_call_into_the_memory_it_named():
    """The proof block's side in the candidate's process (eval/worker/runner.py), on the host, where no CUDA graph
    can be captured: the calls are launched one by one, each output copied into the slot named at setup, so the
    judge's read of those slots sees the run's results; a tuple output goes leaf by leaf."""
    from kernelevolve.eval.worker.runner import CandidateProcess
    from kernelevolve.eval.worker.threads import ThreadWatch

    class Pair(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x), x.sum()

    proc = CandidateProcess(None, None, torch.device("cpu"))  # type: ignore[arg-type]
    proc.watch = ThreadWatch()
    proc.models = {0: torch.nn.ReLU(), 1: Pair()}
    proc.sets = {k: [torch.randn(8)] for k in range(3)}
    mode, slots = proc.do_block(0, [0, 1, 2])
    assert mode == "plain" and len(slots) == 3
    named = [s.data_ptr() for s in slots]
    for k in range(3):  # new contents, as the judge copies them in before its clock
        proc.sets[k][0].copy_(torch.randn(8))
    proc.do_block_run()
    assert [s.data_ptr() for s in slots] == named  # written in place, where the judge reads
    for k in range(3):
        assert torch.equal(slots[k], torch.relu(proc.sets[k][0]))
    proc.do_block_end()
    assert proc.block is None
    _, pairs = proc.do_block(1, [0, 1])
    proc.sets[1][0].copy_(torch.ones(8))
    proc.do_block_run()
    assert torch.equal(pairs[1][0], torch.ones(8)) and float(pairs[1][1]) == 8.0
    proc.do_tick()  # the calibration's request: one tiny kernel and a synchronize


def test_the_candidate_processs_block_writes_jagged_sets_into_the_judges_own_outputs():
    """Jagged sets (or outputs shaped by the values): the judge names the outputs' memory, shaped as each
    reference; setup calls nothing (the sets hold no contents yet); the run writes each output there, and an
    output shaped otherwise is incorrect, not broadcast into the slot."""
    from kernelevolve.eval.worker.checking import CandidateFailure
    from kernelevolve.eval.worker.runner import CandidateProcess
    from kernelevolve.eval.worker.threads import ThreadWatch

    calls = []

    class Counted(torch.nn.Module):
        def forward(self, x):
            calls.append(x.numel())
            return torch.relu(x)

    proc = CandidateProcess(None, None, torch.device("cpu"))  # type: ignore[arg-type]
    proc.watch = ThreadWatch()

    class FirstOnly(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x[:1])

    proc.models = {0: Counted(), 1: FirstOnly()}
    proc.sets = {0: [torch.zeros(5)], 1: [torch.zeros(7)], 10: torch.empty(5), 11: torch.empty(7)}
    assert proc.do_block(0, [0, 1], [10, 11]) == ("plain", []) and not calls
    proc.sets[0][0].copy_(torch.randn(5))
    proc.sets[1][0].copy_(torch.randn(7))
    proc.do_block_run()
    assert calls == [5, 7]
    for k in (0, 1):
        assert torch.equal(proc.sets[10 + k], torch.relu(proc.sets[k][0]))
    proc.do_block(1, [0, 1], [10, 11])  # one element, which copy_ would broadcast over the whole slot
    with pytest.raises(CandidateFailure, match="not shaped as the reference's"):
        proc.do_block_run()
