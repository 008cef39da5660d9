"""Class 9 of issue 45, the rest (eval/worker/precision.py): torch's process-wide state is set back to what it was
before the candidate loaded after every candidate call, so the reference never runs in a state the candidate left
(a candidate toggling torch.set_num_threads in forward got 1.66x), and what was set back still rejects it."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.eval.worker import precision


@pytest.fixture
def pinned():
    threads, dtype = torch.get_num_threads(), torch.get_default_dtype()
    before = precision.pin()
    yield before
    torch.set_num_threads(threads)
    torch.set_default_dtype(dtype)
    torch.set_flush_denormal(False)
    torch.use_deterministic_algorithms(False)
    precision.pin()


def test_what_a_candidate_changes_is_set_back_before_the_next_reference_call_and_still_reported(pinned):
    threads = torch.get_num_threads()
    torch.set_num_threads(1 if threads > 1 else 2)
    torch.set_default_dtype(torch.float64)
    torch.set_flush_denormal(True)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    found = precision.reset()
    assert torch.get_num_threads() == threads and torch.get_default_dtype() == torch.float32
    assert not torch.are_deterministic_algorithms_enabled()
    assert torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
    assert 1e-310 * float(torch.ones(()).item()) != 0.0  # denormals kept again
    assert precision.state() == pinned
    named = {f.split(" ", 1)[0] for f in found}
    assert {
        "torch.get_num_threads()",
        "torch.get_default_dtype()",
        "torch.set_flush_denormal",
        "torch.are_deterministic_algorithms_enabled()",
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    } <= named, found
    assert set(precision.changed(pinned)) == set(found)  # the check after the case still rejects it
    assert precision.reset() == []  # nothing changed since


def test_nothing_is_reported_where_nothing_changed(pinned):
    assert precision.reset() == [] and precision.changed(pinned) == []
