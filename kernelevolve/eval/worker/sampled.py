"""Timed calls judged (the cpu target, the candidate in a process of its own): a few of the timing pass's
iterations, chosen at random by the judge once the pass's length is known, run on input contents never shown
before, written into the iteration's buffers between requests (outside every clock's bracket) and put back after.
The candidate's output of that timed call is taken and judged against the new contents' reference (the rule the
unseen-inputs check judges by), and its time on the judge's clock is held against the pass's other timed calls.

Every call comes through one request in the candidate's process (runner.CandidateProcess.do_run), so nothing there
tells these calls from the others but their contents: a cache keyed by a buffer serves them stale outputs, which
fail the comparison; one keyed by contents misses, and the call is as slow as the work. What this guarantees and
what it does not: docs/harness.md, "Calls alike".
"""

from __future__ import annotations

import random
import statistics
from typing import Any

import torch

from kernelevolve.eval.worker import trees
from kernelevolve.eval.worker.checking import CandidateFailure, Guard, check_output, explain
from kernelevolve.eval.worker.prepare import UNSEEN_FACTOR, UNSEEN_SLACK_MS, PreparedCase
from kernelevolve.eval.worker.timing import midway_iteration
from kernelevolve.problem.inputs import is_sorted
from kernelevolve.result import Status

SAMPLES = 3  # timed iterations judged per pass, one in each third of the pass (before its last round of sets)
# A sampled call (new contents) may take the unseen-inputs check's host bound (prepare.UNSEEN_FACTOR and
# UNSEEN_SLACK_MS) times the pass's median timed call, both by the judge's clock around the request, scaled by the
# reference's own time on the new contents (at most MAX_WORK_DRIFT), before the timed calls are judged to have
# reused results: a host that stalls one call for a scheduler slice stretches one sample, while a cache keyed by
# contents misses on every one.
FACTOR, SLACK_MS = UNSEEN_FACTOR["host"], UNSEEN_SLACK_MS["host"]
MAX_WORK_DRIFT = 2.0


def own_buffers(g: Guard, like: Any, near: Any) -> Any:
    """Buffers shaped as `like`, zero-filled, on the device of `near` (a set of the case), handed to the candidate's
    process before any contents are copied in: a jagged set's new draw, which fits no buffers it has."""
    leaves = trees.tensors(near)
    device = leaves[0].device if leaves else g.device
    return g.host.adopt(trees.map_tensors(lambda t: torch.zeros_like(t, device=device), like))


def chosen(iterations: int, sets: int, samples: int = SAMPLES) -> set[int]:
    """The iterations to sample: one at random in each of `samples` equal strata of those before the pass's last
    round over its `sets` (each set is called again after a sampled iteration, so the last output per set, which
    the timing-outputs check reads, is of the set's own contents), never the one that rotates the sets' contents
    (its new contents would be rotated away before they are put back)."""
    half = midway_iteration(iterations, sets)
    span = [it for it in range(iterations - sets) if it != half]
    pick = random.SystemRandom()
    strata = min(samples, len(span))
    return {pick.choice(span[s * len(span) // strata : (s + 1) * len(span) // strata]) for s in range(strata)}


def new_floats(seen: Any, drawn: Any) -> Any | None:
    """`seen` (a jagged set the candidate has seen) with new floating contents taken from `drawn` (a new draw of the
    problem, of another layout), its integer leaves (offsets, lengths, indices: the layout) kept: each floating
    leaf takes the drawn set's leaf at its place, flattened and repeated to its size, and sorted along its last
    dimension where it was (as a redraw keeps it, problem/inputs.py). None where there is no floating leaf, or one
    the drawn set cannot fill. For problems whose floating inputs may be redrawn (PreparedCase.floats_free)."""
    ours, theirs = trees.tensors(seen), trees.tensors(drawn)
    floats = [(i, t) for i, t in enumerate(ours) if t.is_floating_point() and t.numel()]
    if len(ours) != len(theirs) or not floats:
        return None
    values: dict[int, torch.Tensor] = {}
    for i, t in floats:
        source = theirs[i].reshape(-1)
        if not theirs[i].is_floating_point() or not source.numel():
            return None
        if source.numel() < t.numel():
            source = source.repeat(-(-t.numel() // source.numel()))
        flat = source[: t.numel()].to(t.device, t.dtype)
        values[i] = flat.reshape(t.shape).sort(dim=-1).values if is_sorted(t) else flat.reshape(t.shape)
    order = iter(range(len(ours)))
    return trees.map_tensors(lambda t: values.get(next(order), t).clone(), seen)


class TimedSampler:
    """The timer's `before` hook and the harness's after-call hook over one timing pass (time_case)."""

    def __init__(self, pc: PreparedCase, g: Guard, fns: dict[str, Any]) -> None:
        self.pc, self.g, self.fns = pc, g, fns
        self.picked: set[int] | None = None
        self.buffers: Any = None  # the sampled iteration's input set, holding new contents
        self.saved: Any = None  # what it held before (None: buffers of their own, let go after)
        self.ref: Any = None  # the new contents' reference, till the candidate's output is judged
        self.calls: list[float] = []  # the judge's bracket around each sampled timed call (ms)
        self.eager: list[float] = []  # and around the reference's call on the same contents

    def before(self, it: int, iterations: int, inputs: Any) -> Any:
        """Puts back what the last sampled iteration overwrote (before the sets' contents rotate, where they do at
        this iteration); on a sampled iteration writes new contents in: into the iteration's own buffers where they
        fit (a jagged set keeps its layout and takes new floating contents, `new_floats`), else into buffers of
        their own, returned to take the iteration's place (docs/harness.md, "Calls alike")."""
        self.restore()
        if self.picked is None:
            self.picked = chosen(iterations, len(self.pc.timing_sets))
        # A sample holds three sets' worth more (the new inputs, their reference, the contents put back): only
        # where the memory plan held back at least two sets beside the timing sets.
        if it not in self.picked or self.pc.fresh is None or len(self.pc.unseen_sets) < 2:
            return None
        new, ref = self.pc.fresh(1)[0]
        self.g.ran("unseen_inputs")
        if not trees.same_layout([inputs, new]) and self.pc.floats_free:
            mixed = new_floats(inputs, new)
            if mixed is not None:
                with torch.no_grad():
                    new, ref = mixed, self.pc.ref_model(*mixed)
        if not trees.same_layout([inputs, new]):  # buffers of its own, shared before the contents are written
            self.buffers, self.ref = own_buffers(self.g, new, inputs), ref
            trees.copy_(self.buffers, new)
            return self.buffers
        self.buffers, self.saved, self.ref = inputs, trees.clone(inputs), ref
        trees.copy_(inputs, new)
        return None

    def restore(self) -> None:
        if self.buffers is not None and self.saved is not None:
            trees.copy_(self.buffers, self.saved)
        elif self.buffers is not None:
            self.g.host.forget(self.buffers)
        self.buffers = self.saved = self.ref = None

    def after(self, name: str) -> None:
        """After each timed call: on a sampled iteration, the brackets taken, and the candidate's output judged."""
        if self.buffers is None or name not in ("candidate", "eager"):
            return
        (self.calls if name == "candidate" else self.eager).append(self.fns[name].brackets[-1])
        if name != "candidate":
            return
        out = self.g.host.last_outputs([self.buffers]).get(0)
        if out is None:
            raise CandidateFailure(
                Status.REJECTED, "unseen-inputs check: a timed call on contents it had not seen left no output"
            )
        check_output(out, [], self.pc, self.g)
        cmp = explain(self.pc.judge_set(out, self.ref), out, "a timed call on new contents")
        if not cmp.ok:
            raise CandidateFailure(
                Status.INCORRECT,
                f"unseen-inputs check: the output of a timed call on contents it had not seen is wrong ({cmp.reason})",
            )

    def check_times(self) -> None:
        """The sampled calls against the pass's median timed call, both on the judge's clock; raises
        CandidateFailure (rejected) where even the fastest sampled call is past the bound."""
        self.restore()
        if not self.calls:
            return
        typical = statistics.median(self.fns["candidate"].brackets)
        drift = 1.0
        if self.eager:
            drift = min(max(min(self.eager) / statistics.median(self.fns["eager"].brackets), 1.0), MAX_WORK_DRIFT)
        bound = FACTOR * typical * drift + SLACK_MS
        if min(self.calls) > bound:
            raise CandidateFailure(
                Status.REJECTED,
                f"unseen-inputs check: timed calls on contents it had not seen took {min(self.calls):.4g} ms by the "
                f"judge's clock, against {typical:.4g} ms for its timed calls (median; allowed {bound:.4g} ms, "
                f"{len(self.calls)} sampled): results are reused across calls",
            )
