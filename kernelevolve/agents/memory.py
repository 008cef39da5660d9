"""The context-memory agent: what each evaluation says, and what the next prompt should be told.

After every evaluation it classifies the node's failure (compile / runtime error class, mismatch pattern),
places a correct node on the roofline where the problem's minimum bytes are known (the harness's roofline on
GPU targets; on the cpu, the minimum bytes at the host's bandwidth from platforms/facts.py, measured where the
peaks cache has it and assumed otherwise, as the advice says), names the dominant bottleneck (from the
harness's profile on cuda, when there is one: kernel resources the compiler reports, launches, the kernel that
dominates device time, Nsight Compute's limiter), and remembers the changes tried on the ancestors that did
not help, so the prompt can say "do not try this again". A bottleneck it cannot name is never sent to a model.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelevolve.operators.edits import strategy_of
from kernelevolve.platforms import hosted
from kernelevolve.platforms.facts import DeviceFacts
from kernelevolve.problem.diagnostics import shorten_line
from kernelevolve.result import EvalResult, Status

__all__ = ["Analysis", "analyse", "brief", "directives", "failed_strategies", "strategy_of"]

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
    bottleneck: str = "unknown"  # correctness | memory | compute | launch | latency | unknown
    summary: str = ""
    advice: list[str] = field(default_factory=list)
    profile: dict[str, Any] | None = None  # the facts read from EvalResult.profile (see profile_facts)

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


def brief(reason: str, limit: int = 200) -> str:
    """A reason's first line for a summary, without a compiler command line (the log has the diagnostics)."""
    first = reason.strip().splitlines()[0] if reason.strip() else ""
    return shorten_line(first, limit)[: limit + 60]


def _all_pow2(shape: dict[str, Any]) -> bool:
    return all(isinstance(v, int) and v > 0 and v & (v - 1) == 0 for v in shape.values())


def roofline(result: EvalResult, facts: DeviceFacts | None = None) -> dict[str, float] | None:
    """Primary case: its floor against the measured time. GPU targets: the harness's roofline time. The cpu, where
    the harness records none: its minimum bytes at the host's bandwidth (`facts`: measured where the peaks cache
    has it, else assumed, as the facts say)."""
    primary = result.cases[0] if result.cases else None
    if primary is None or not primary.t_candidate_ms:
        return None
    floor_ms, extra = primary.t_roofline_ms, {}
    if not floor_ms and hosted(result.target) and facts is not None and facts.bandwidth_gbs and primary.min_bytes:
        floor_ms = primary.min_bytes / (facts.bandwidth_gbs * 1e9) * 1e3
        extra = {"bandwidth_gbs": facts.bandwidth_gbs}
    if not floor_ms:
        return None
    return {
        "min_bytes": float(primary.min_bytes or 0),
        "floor_ms": floor_ms,
        "measured_ms": primary.t_candidate_ms,
        "fraction_of_roofline": floor_ms / primary.t_candidate_ms,
        **extra,
    }


HOST_MEMORY_BOUND = 0.25  # cpu: under this share of the bytes' floor, the time goes to work other than memory


HIGH_SHARED_BYTES = 96 * 1024  # per program: above this few programs share an SM
LAUNCH_BOUND_MIN = 3  # launches per forward call ...
LAUNCH_BOUND_MEAN_US = 20.0  # ... of kernels this short on average: launch overhead dominates
NCU_SATURATED_PCT = 40.0  # below this for both DRAM and SM throughput, neither limits: latency


def _name(text: Any, limit: int = 80) -> str:
    s = str(text)
    return s if len(s) <= limit else s[:limit] + "..."


def _triton_facts(entries: list[dict[str, Any]], advice: list[str]) -> list[dict[str, Any]]:
    """Per Triton kernel, the specialisation with the most spills (then registers, shared memory); spill advice,
    and shared-memory advice for the specialisation using the most."""
    worst: dict[str, dict[str, Any]] = {}
    most_shared: dict[str, dict[str, Any]] = {}
    for e in entries:
        name = str(e.get("kernel") or e.get("name") or "?")
        if (e.get("shared") or 0) > (most_shared.get(name, {}).get("shared") or 0):
            most_shared[name] = e
        rank = (e.get("n_spills") or 0, e.get("n_regs") or 0, e.get("shared") or 0)
        old = worst.get(name)
        if old is None or rank > (old.get("n_spills") or 0, old.get("n_regs") or 0, old.get("shared") or 0):
            worst[name] = e
    kept = ("n_regs", "n_spills", "shared", "num_warps", "num_stages")
    facts = [{"kernel": name, **{k: e.get(k) for k in kept}} for name, e in worst.items()]
    for f in facts:
        if (f["n_spills"] or 0) > 0:
            advice.append(
                f"`{f['kernel']}` spills registers ({f['n_spills']} spilled, {f['n_regs']} registers per thread, "
                f"{f['num_warps']} warps): smaller BLOCK or fewer warps"
            )
        big = most_shared.get(f["kernel"], {})
        if (big.get("shared") or 0) >= HIGH_SHARED_BYTES:
            advice.append(
                f"`{f['kernel']}` uses {big['shared'] / 1024:.0f} KiB of shared memory per program "
                f"({big.get('num_stages')} stages): fewer stages or smaller tiles let more programs share an SM"
            )
    return facts[:8]


def _ncu_facts(ncu: Any, advice: list[str]) -> tuple[dict[str, Any] | str | None, str]:
    """The kernel ncu timed longest: which throughput limits it. Returns (facts, bottleneck or "")."""
    if isinstance(ncu, str):
        return ncu, ""
    rows = [r for r in ncu or [] if isinstance(r, dict) and ("dram_pct" in r or "sm_pct" in r)]
    if not rows:
        return None, ""
    top = max(rows, key=lambda r: r.get("time_us") or 0.0)
    dram, sm = float(top.get("dram_pct") or 0.0), float(top.get("sm_pct") or 0.0)
    name = _name(top.get("name", "?"))
    if max(dram, sm) < NCU_SATURATED_PCT:
        limiter, bottleneck = "neither", "latency"
        advice.append(
            f"ncu: `{name}` is latency-bound: neither DRAM ({dram:.0f}% of peak) nor SM ({sm:.0f}%) throughput "
            "is near its peak; keep more work in flight (occupancy, more independent loads per thread)"
        )
    elif dram >= sm:
        limiter, bottleneck = "dram", "memory"
        advice.append(
            f"ncu: `{name}` is DRAM-bound ({dram:.0f}% of peak DRAM throughput, SM {sm:.0f}%): move fewer bytes "
            "(fusion, smaller dtypes, reuse through shared memory or L2)"
        )
    else:
        limiter, bottleneck = "sm", "compute"
        advice.append(
            f"ncu: `{name}` is SM-bound ({sm:.0f}% of peak SM throughput, DRAM {dram:.0f}%): fewer instructions "
            "per element (tensor cores, cheaper math, less index arithmetic)"
        )
    facts: dict[str, Any] = {"name": name, "dram_pct": dram, "sm_pct": sm, "limiter": limiter}
    limit = top.get("occupancy_limit_registers")
    if limit is not None and 0 < float(limit) <= 2:
        facts["occupancy_limit_registers"] = float(limit)
        regs = top.get("registers")
        per_thread = f" ({regs:g} per thread)" if isinstance(regs, (int, float)) else ""
        advice.append(
            f"ncu: registers{per_thread} limit `{name}` to {float(limit):g} block(s) per SM: fewer registers "
            "(smaller tiles) or fewer warps per program"
        )
    return facts, bottleneck


def profile_facts(profile: dict[str, Any] | None) -> tuple[dict[str, Any] | None, list[str], str]:
    """What the harness's profile (EvalResult.profile, cuda) says: (facts, advice, bottleneck or "").
    Register spills and large shared memory per Triton kernel, many short launches (launch-bound), the kernel
    that dominates device time, and from Nsight Compute whether DRAM or SM throughput is the limiter."""
    if not profile:
        return None, [], ""
    advice: list[str] = []
    bottleneck = ""
    facts: dict[str, Any] = {}
    triton = profile.get("triton") or []
    if triton:
        facts["triton"] = _triton_facts(triton, advice)
    kernels = [k for k in profile.get("kernels") or [] if isinstance(k, dict)]
    launches = int(profile.get("launches") or 0)
    if launches:
        facts["launches"] = launches
        total = sum(float(k.get("device_us") or 0.0) for k in kernels)
        facts["device_us"] = round(total, 3)
        if total > 0:
            top = max(kernels, key=lambda k: float(k.get("device_us") or 0.0))
            share = float(top.get("device_us") or 0.0) / total
            facts["dominant"] = {"name": _name(top.get("name", "?")), "share": round(share, 3)}
            if len(kernels) > 1:
                advice.append(
                    f"`{_name(top.get('name', '?'))}` takes {100 * share:.0f}% of the device time "
                    f"({top.get('count', 1)} of {launches} launches): optimise it first"
                )
        mean_us = total / launches if total > 0 else 0.0
        if launches >= LAUNCH_BOUND_MIN and total > 0 and mean_us < LAUNCH_BOUND_MEAN_US:
            bottleneck = "launch"
            advice.append(
                f"launch-bound: fuse the {launches} launches (one forward call runs {launches} device operations "
                f"of {mean_us:.1f} us on average)"
            )
    own = profile.get("own_share")
    if isinstance(own, (int, float)):
        facts["own_share"] = float(own)
        if own < 0.5:
            advice.append(
                f"only {100 * own:.0f}% of the device time is in the candidate's own kernels: the rest is PyTorch or "
                "library kernels around them (copies, casts, fills); fold that work into the kernel"
            )
    if "ncu" in profile:
        ncu, limiter = _ncu_facts(profile.get("ncu"), advice)
        if ncu is not None:
            facts["ncu"] = ncu
        bottleneck = bottleneck or limiter
    return (facts or None), advice, bottleneck


def _profile_summary(facts: dict[str, Any]) -> str:
    parts = []
    if facts.get("launches"):
        parts.append(f"{facts['launches']} launches")
    dominant = facts.get("dominant")
    if dominant and dominant.get("share", 1.0) < 1.0:
        parts.append(f"`{dominant['name']}` {100 * dominant['share']:.0f}% of device time")
    spills = [t["kernel"] for t in facts.get("triton", []) if (t.get("n_spills") or 0) > 0]
    if spills:
        parts.append(f"register spills in {', '.join(spills)}")
    ncu = facts.get("ncu")
    if isinstance(ncu, dict):
        parts.append({"dram": "DRAM-bound", "sm": "SM-bound"}.get(ncu["limiter"], "latency-bound") + " (ncu)")
    return ", ".join(parts)


def analyse(node_id: int, result: EvalResult, facts: DeviceFacts | None = None) -> Analysis:
    """facts: the target's (platforms/facts.py); on the cpu they give the roofline the harness does not."""
    a = Analysis(node_id, result.status.value)
    if result.status is Status.INCONCLUSIVE:  # the host was contended: nothing learnt about the kernel
        a.summary = f"inconclusive: {brief(result.reason)}"
        return a
    if result.status in (Status.COMPILE_ERROR, Status.RUNTIME_ERROR, Status.CRASHED, Status.TIMEOUT, Status.REJECTED):
        a.error_class, advice = classify_error(result)
        a.bottleneck = "correctness"
        a.advice.append(advice)
        a.summary = f"{result.status.value} ({a.error_class}): {brief(result.reason)}"
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
    a.roofline = roofline(result, facts)
    host = a.roofline is not None and "bandwidth_gbs" in a.roofline
    primary = result.cases[0] if result.cases else None
    if primary and primary.t_candidate_ms and primary.t_candidate_ms < 0.02:
        a.bottleneck = "launch"
        a.advice.append("the kernel runs for microseconds: fewer launches, fuse, or more work per program")
    elif host and a.roofline:
        _host_advice(a, facts)
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
    a.profile, profile_advice, profile_bottleneck = profile_facts(result.profile)
    if a.profile:
        # The profile's measurements refine the timing's guess; a launch-bound verdict from timing stands.
        if profile_bottleneck and (a.bottleneck != "launch" or profile_bottleneck == "launch"):
            a.bottleneck = profile_bottleneck
        a.advice.extend(profile_advice)
        described = _profile_summary(a.profile)
        if described:
            a.summary += f"; profile: {described}"
    slow = [c for c in result.cases if c.speedup and c.speedup < 1.0]
    if slow and len(slow) < len(result.cases):
        a.advice.append(
            "slower than PyTorch on "
            + "; ".join(" ".join(f"{k}={v}" for k, v in c.shape.items()) for c in slow)
            + ": specialise for those shapes"
        )
    return a


def _host_advice(a: Analysis, facts: DeviceFacts | None) -> None:
    """The cpu's bottleneck from where the kernel sits against the time its minimum bytes take."""
    r = a.roofline or {}
    fraction = r.get("fraction_of_roofline", 0.0)
    how = "measured" if facts is not None and facts.bandwidth_source == "measured" else "assumed, not measured"
    floor = (
        f"{r.get('min_bytes', 0) / 1e6:.3g} MB at {r.get('bandwidth_gbs', 0):.0f} GB/s ({how}) take "
        f"{r.get('floor_ms', 0):.3g} ms, the kernel {r.get('measured_ms', 0):.3g} ms"
    )
    if fraction >= 0.6:
        a.bottleneck = "memory"
        a.advice.append(f"near the host's memory roofline ({floor}): only moving fewer bytes (fusion) helps now")
    elif fraction >= HOST_MEMORY_BOUND:
        a.bottleneck = "memory"
        a.advice.append(
            f"at {100 * fraction:.0f}% of the host's memory roofline ({floor}): one pass over the data, "
            "contiguous inner loops, every core streaming its own rows"
        )
    else:
        a.bottleneck = "compute"
        cores = f"the {facts.cores} cores" if facts is not None and facts.cores else "the cores"
        a.advice.append(
            f"at {100 * fraction:.0f}% of the host's memory roofline ({floor}): the time goes into arithmetic "
            f"and loop overhead, not memory: vectorise the inner loops (-O3 -march=native, no branches, "
            f"`#pragma omp simd`), parallelise the outer loop over {cores} with OpenMP, avoid exp/log library calls "
            "in the inner loop"
        )


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
        known = analysis.bottleneck not in ("", "unknown")
        clause = f" Dominant bottleneck: {analysis.bottleneck}." if known else ""
        out.append(f"Diagnosis of the current kernel: {analysis.summary}.{clause}")
        out.extend(analysis.advice)
    for s in failed[-5:]:
        out.append(f"Already tried without gain, do not try again: {s}")
    return out
