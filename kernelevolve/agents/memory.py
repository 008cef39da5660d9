"""The context-memory agent: what each evaluation says, and what the next prompt should be told.

After every evaluation it classifies the node's failure (compile / runtime error class, mismatch pattern),
places a correct node on the roofline where the problem's minimum bytes are known, names the dominant
bottleneck, and remembers the changes tried on the ancestors that did not help, so the prompt can say
"do not try this again".
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelevolve.eval.result import EvalResult, Status

ERROR_CLASSES: list[tuple[str, str, str]] = [
    # (class, regex over reason + log tail, what to do about it)
    ("syntax", r"SyntaxError|syntax error", "fix the Python syntax at the reported line"),
    (
        "triton_compile",
        r"CompilationError|triton\.compiler|constexpr|tl\.\w+.*(?:error|Error)",
        "fix the Triton compile error: constexpr block sizes, power-of-two tl.arange, matching tl.dot shapes",
    ),
    (
        "triton_resources",
        r"OutOfResources|out of resource|shared memory",
        "the kernel needs more shared memory or registers than the chip has: smaller tiles or fewer stages",
    ),
    (
        "cpp_build",
        r"Error building extension|ninja: build stopped|\.(?:cpp|cu|h):\d+:\d+: error|\.cu\(\d+\): error",
        "fix the C++ compile error shown in the log; check includes and tensor accessors",
    ),
    (
        "illegal_memory",
        r"illegal memory access|misaligned address|out of bounds|CUDA error",
        "an out-of-bounds access: mask every load and store, check offsets for the last block, use int64 offsets",
    ),
    ("segfault", r"SIGSEGV|SIGBUS", "the kernel wrote or read outside its buffers: check bounds and strides"),
    (
        "out_of_memory",
        r"out of memory|can't allocate memory|OutOfMemoryError|SIGKILL",
        "the kernel allocates too much: reuse buffers, allocate only the output",
    ),
    (
        "shape",
        r"shape \(|shape mismatch|size mismatch|must match the size",
        "the output shape is wrong: match the reference's output shape exactly",
    ),
    ("dtype", r"dtype", "return the reference's dtype (cast the accumulator back at the end)"),
    (
        "policy",
        r"policy|not writing a kernel|calls the reference|high-level torch",
        "do the computation in your own kernel: no reference Model, no high-level torch ops on the hot path",
    ),
    ("timeout", r"timed out", "the kernel hangs or is far too slow: check loop bounds and termination"),
    (
        "import",
        r"ImportError|ModuleNotFoundError|NameError|AttributeError",
        "a name or module is missing: import what you use, spell Triton and torch APIs exactly",
    ),
]


@dataclass
class Analysis:
    node_id: int
    status: str
    error_class: str = ""
    mismatch: str = ""
    roofline: dict[str, float] | None = None
    bottleneck: str = "unknown"  # correctness | memory | compute | launch | unknown
    summary: str = ""
    advice: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def classify_error(result: EvalResult) -> tuple[str, str]:
    text = f"{result.reason}\n{result.log_tail}"
    for name, pattern, advice in ERROR_CLASSES:
        if re.search(pattern, text):
            return name, advice
    return "other", "read the error and the log tail; reproduce on a small input"


def mismatch_pattern(result: EvalResult) -> str:
    """Which cases and inputs fail: all cases, some shapes, only non-power-of-two shapes, NaN/Inf, one
    input distribution."""
    cases = result.cases
    bad = [c for c in cases if not c.correct]
    if not bad:
        return ""
    reasons = " ".join(c.reason for c in bad)
    parts = []
    if len(bad) == len(cases):
        parts.append("every shape case fails")
    else:
        shapes = "; ".join(" ".join(f"{k}={v}" for k, v in c.shape.items()) for c in bad)
        parts.append(f"{len(bad)} of {len(cases)} shape cases fail ({shapes})")
        good_pow2 = all(_all_pow2(c.shape) for c in cases if c.correct)
        if good_pow2 and all(not _all_pow2(c.shape) for c in bad):
            parts.append("only shapes with a non-power-of-two size fail: boundary masking")
    if "NaN" in reasons or "Inf" in reasons:
        parts.append("NaN/Inf in the output")
    dists = sorted({m.group(1) for m in re.finditer(r"(\w+) inputs:", reasons)})
    if dists and "given" not in dists:
        parts.append(f"fails only on {', '.join(dists)} inputs (numerical range: overflow, cancellation)")
    if "modified" in reasons:
        parts.append("the kernel modifies its input")
    err = max((c.max_abs_err or 0.0) for c in bad)
    if err and err < 1e-2:
        parts.append(f"errors are small (max {err:.2g}): accumulation order or precision")
    return "; ".join(parts)


def _all_pow2(shape: dict[str, Any]) -> bool:
    return all(isinstance(v, int) and v > 0 and v & (v - 1) == 0 for v in shape.values())


def roofline(result: EvalResult) -> dict[str, float] | None:
    """Primary case: the harness's roofline time (GPU targets) against the measured time."""
    primary = result.cases[0] if result.cases else None
    if primary is None or not primary.t_roofline_ms or not primary.t_candidate_ms:
        return None
    return {
        "min_bytes": float(primary.min_bytes or 0),
        "floor_ms": primary.t_roofline_ms,
        "measured_ms": primary.t_candidate_ms,
        "fraction_of_roofline": primary.t_roofline_ms / primary.t_candidate_ms,
    }


def analyse(node_id: int, result: EvalResult) -> Analysis:
    a = Analysis(node_id, result.status.value)
    if result.status in (Status.COMPILE_ERROR, Status.RUNTIME_ERROR, Status.CRASHED, Status.TIMEOUT, Status.REJECTED):
        a.error_class, advice = classify_error(result)
        a.bottleneck = "correctness"
        a.advice.append(advice)
        a.summary = f"{result.status.value} ({a.error_class}): {result.reason[:200]}"
        return a
    if result.status is Status.INCORRECT:
        a.mismatch = mismatch_pattern(result)
        a.bottleneck = "correctness"
        a.summary = f"incorrect: {a.mismatch}"
        if "boundary" in a.mismatch:
            a.advice.append("mask loads and stores for sizes that are not a multiple of the block")
        if "NaN" in a.mismatch or "numerical range" in a.mismatch:
            a.advice.append("keep the computation numerically stable: subtract the max, accumulate in fp32")
        return a
    a.roofline = roofline(result)
    primary = result.cases[0] if result.cases else None
    if primary and primary.t_candidate_ms and primary.t_candidate_ms < 0.02:
        a.bottleneck = "launch"
        a.advice.append("the kernel runs for microseconds: fewer launches, fuse, or more work per program")
    elif a.roofline and a.roofline["fraction_of_roofline"] >= 0.6:
        a.bottleneck = "memory"
        a.advice.append("near the memory roofline: only moving fewer bytes (fusion, smaller dtypes) helps now")
    elif a.roofline:
        a.bottleneck = "memory"
        a.advice.append(
            f"at {100 * a.roofline['fraction_of_roofline']:.0f}% of the memory roofline: coalesce "
            "accesses, vectorise loads, keep more bytes in flight"
        )
    speed = f"speedup {result.speedup:.3f}" if result.speedup else "not timed"
    a.summary = f"correct, {speed}" + (
        f", {100 * a.roofline['fraction_of_roofline']:.0f}% of roofline" if a.roofline else ""
    )
    slow = [c for c in result.cases if c.speedup and c.speedup < 1.0]
    if slow and len(slow) < len(result.cases):
        a.advice.append(
            "slower than PyTorch on "
            + "; ".join(" ".join(f"{k}={v}" for k, v in c.shape.items()) for c in slow)
            + ": specialise for those shapes"
        )
    return a


def strategy_of(response_text: str) -> str:
    """What the model said it changed: the prose before its first code block or edit."""
    head = re.split(r"```|<<<<<<< SEARCH", response_text, maxsplit=1)[0]
    return " ".join(head.split())[:240]


def failed_strategies(lineage: list[dict[str, Any]]) -> list[str]:
    """Changes tried on the lineage that made nothing better: each entry has 'strategy', 'fitness' and
    'parent_fitness' (None when not timed)."""
    out = []
    for step in lineage:
        strategy = step.get("strategy") or ""
        if not strategy:
            continue
        fit, parent_fit = step.get("fitness") or 0.0, step.get("parent_fitness") or 0.0
        if fit <= parent_fit:
            out.append(strategy)
    return out


def directives(analysis: Analysis | None, failed: list[str]) -> list[str]:
    """What the prompt's "analysis of earlier attempts" section says."""
    out = []
    if analysis is not None:
        out.append(f"Diagnosis of the current kernel: {analysis.summary}. Dominant bottleneck: {analysis.bottleneck}.")
        out.extend(analysis.advice)
    for s in failed[-5:]:
        out.append(f"Already tried without gain, do not try again: {s}")
    return out
