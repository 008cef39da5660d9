"""Suites: finding their problems and seed kernels, and turning evaluations into the results table.

A suite is a folder of problem folders (`<name>/problem.py` with `seed_*.py` beside it, and any `candidate_*.py`:
more starting kernels for a search), a glob of problem files, `ranking` (the suite shipped in `suites/ranking`), or
a KernelBench checkout's level.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevolve.platforms import PLATFORMS, get_platform
from kernelevolve.problem.candidate import detect_languages
from kernelevolve.problem.problem import TargetSpeedup
from kernelevolve.result import EvalResult, Status, geomean
from kernelevolve.suites import scores

REPO_ROOT = Path(__file__).resolve().parents[2]
SUITES = {"ranking": REPO_ROOT / "suites" / "ranking", "aten": REPO_ROOT / "suites" / "aten"}


class SuiteError(Exception):
    pass


@dataclass
class BenchItem:
    name: str
    problem: Path
    seed: Path | None
    # candidate_*.py beside the problem that the target can time: more starting kernels for a search
    starts: list[Path] = field(default_factory=list)


@dataclass
class BenchRow:
    name: str
    status: str
    correct: bool
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    cases: list[dict[str, Any]] = field(default_factory=list)
    roofline: float | None = None  # fraction of the memory roofline reached on the primary case
    seed: str = ""
    run: str = ""
    reason: str = ""
    worst_case: float | None = None  # the lowest per-case speedup over eager: below 1.0 is a regression
    kernel: str = ""  # after a search: the exported module the row evaluated
    search: str = ""  # after a search: how many nodes it evaluated and why it stopped
    target: dict[str, Any] | None = None  # the problem's TARGET_SPEEDUP and how the row measured against it
    review: list[str] = field(default_factory=list)  # the harness's review notes on the evaluation the row shows
    stages: dict[str, float] = field(default_factory=dict)  # wall seconds per stage of that evaluation
    # KernelBench's own verdict (atol = rtol = 1e-2 on get_inputs()) beside ours; None: the comparison was not reached
    kernelbench_correct: bool | None = None
    waiting: int = 0  # a deferred model's calls the problem's run waits for (status "waiting")
    degraded: list[str] = field(default_factory=list)  # guarantees the row's evaluation ran without
    harness_peak_bytes: int | None = None  # cuda: the harness's peak device memory while it prepared the sets
    # over the faster of eager and torch.compile per case (eager alone where compile was not timed or was wrong)
    speedup_best: float | None = None
    # Why the row's figures are unreliable (a contended host, with the judge's measured spread: EvalResult.unreliable);
    # such a row stays out of the suite's figures (fast_p) unless kept (`bench --keep-unreliable`).
    unreliable: str = ""


def _seed_for(folder: Path, target: str) -> Path | None:
    for name in PLATFORMS[target].seeds if target in PLATFORMS else ("seed.py",):
        if (folder / name).is_file():
            return folder / name
    return None


def discover(suite: str, target: str) -> list[BenchItem]:
    root = SUITES.get(suite, Path(suite))
    if root.is_dir():
        problems = sorted(root.glob("*/problem.py")) or sorted(p for p in root.glob("*.py") if "seed" not in p.name)
    else:
        problems = sorted(Path(p) for p in glob.glob(suite))
    if not problems:
        raise SuiteError(
            f"no problems found for {suite!r}: give a folder of <name>/problem.py, a glob, or "
            f"one of {', '.join(SUITES)}"
        )
    items = []
    for p in problems:
        if p.name == "problem.py":
            items.append(BenchItem(p.parent.name, p, _seed_for(p.parent, target), _starts_for(p.parent, target)))
        else:
            items.append(BenchItem(p.stem, p, None))
    return items


def _starts_for(folder: Path, target: str) -> list[Path]:
    """A problem folder's candidate_*.py files, less those the target would only interpret (Triton on the cpu
    target: correct but never timed, so they could not win a case)."""
    platform = get_platform(target)
    return [
        path
        for path in sorted(folder.glob("candidate_*.py"))
        if not platform.is_interpreted(detect_languages(path.read_text()))
    ]


def kernelbench(path: Path, level: int, ids: str | None) -> list[BenchItem]:
    """Problems of a KernelBench checkout (KernelBench/level{L}/{id}_{name}.py); nothing is copied."""
    folder = next((f for f in (path / "KernelBench" / f"level{level}", path / f"level{level}") if f.is_dir()), None)
    if folder is None:
        raise SuiteError(f"{path}: no KernelBench/level{level} folder; point --path at a KernelBench checkout")
    wanted = _parse_ids(ids) if ids else None
    items = []
    for p in sorted(
        folder.glob("*.py"), key=lambda p: int(re.match(r"\d+", p.name).group()) if re.match(r"\d+", p.name) else 0
    ):
        m = re.match(r"(\d+)_", p.name)
        if m and (wanted is None or int(m.group(1)) in wanted):
            items.append(BenchItem(p.stem, p, None))
    if not items:
        raise SuiteError(f"{folder}: no problems match --problems {ids}")
    return items


def _parse_ids(spec: str) -> set[int]:
    out: set[int] = set()
    for part in spec.split(","):
        a, _, b = part.partition("-")
        try:
            out.update(range(int(a), int(b or a) + 1))
        except ValueError:
            raise SuiteError(f"--problems {spec!r}: expected numbers and ranges like 1-20,25") from None
    return out


def row_from(name: str, result: EvalResult, seed: str = "", run: str = "", kernel: str = "") -> BenchRow:
    cases = []
    for c in result.cases:
        cases.append(
            {
                "shape": c.shape,
                "correct": c.correct,
                "timed": c.timed,  # False: one of the problem's CHECK_CASES, judged for correctness alone
                "speedup_eager": _ratio(c.t_eager_ms, c.t_candidate_ms),
                "speedup_compile": _ratio(c.t_compile_ms, c.t_candidate_ms),
                "speedup_best": scores.best_of(
                    c.t_candidate_ms, c.t_eager_ms, c.t_compile_ms if c.compile_baseline_correct is not False else None
                ),
                "t_candidate_ms": c.t_candidate_ms,
                "t_eager_ms": c.t_eager_ms,
                "t_compile_ms": c.t_compile_ms,
                "t_roofline_ms": c.t_roofline_ms,
                "t_copy_ms": c.t_copy_ms,
                "memory_bound": c.memory_bound,
                "t_bytes_ms": c.t_bytes_ms,
                "t_candidate_graph_ms": c.t_candidate_graph_ms,
                "t_eager_graph_ms": c.t_eager_graph_ms,
                "error_ratio": c.error_ratio,
                "correctness": c.correctness,
            }
        )
    roof = None
    primary = result.cases[0] if result.cases else None
    if primary is not None and primary.t_roofline_ms and primary.t_candidate_ms:
        roof = primary.t_roofline_ms / primary.t_candidate_ms
    return BenchRow(
        name,
        result.status.value,
        result.correct,
        result.speedup_over("eager"),
        result.speedup_over("compile"),
        cases,
        roof,
        seed,
        run,
        result.reason,
        min((c["speedup_eager"] for c in cases if c["speedup_eager"]), default=None) if result.correct else None,
        kernel,
        review=list(result.review),
        stages={k: round(v, 3) for k, v in result.stages.items()},
        kernelbench_correct=result.kernelbench_correct,
        degraded=list(result.degraded),
        harness_peak_bytes=result.harness_peak_bytes,
        speedup_best=_geomean([c["speedup_best"] for c in cases if c["timed"]]) if result.correct else None,
        unreliable=result.unreliable,
    )


def _geomean(values: list[float | None]) -> float | None:
    """Over every case, or None where one was not timed."""
    if not values or not all(values):
        return None
    return geomean([v for v in values if v])


def apply_target(row: BenchRow, target: TargetSpeedup | None) -> BenchRow:
    """Fill the row's target: met or not on its case, and, for the table, where that case's time stands against
    its roofline floor."""
    if target is None:
        return row
    case = row.cases[target.case] if target.case < len(row.cases) else {}
    measured = case.get("speedup_eager") if row.correct else None
    no_case = row.cases and not case  # SHAPE_CASES built by code, and the index past its end
    row.target = {
        "speedup": target.speedup,
        "case": target.case,
        "note": f"no shape case {target.case} (SHAPE_CASES has {len(row.cases)})" if no_case else target.note,
        "shape": case.get("shape"),
        "measured": measured,
        "met": measured is not None and measured >= target.speedup,
        "t_candidate_ms": case.get("t_candidate_ms"),
        "t_eager_ms": case.get("t_eager_ms"),
        "t_roofline_ms": case.get("t_roofline_ms"),
        "t_copy_ms": case.get("t_copy_ms"),
    }
    return row


def _target_cells(t: dict[str, Any]) -> str:
    shape = " ".join(f"{k}={v}" for k, v in (t.get("shape") or {}).items()) or f"case {t['case']}"
    measured = _x(t["measured"])
    met = "yes" if t["met"] else "no"
    cand, eager, floor, copy = (t.get(k) for k in ("t_candidate_ms", "t_eager_ms", "t_roofline_ms", "t_copy_ms"))
    where = "-"
    if cand and floor:
        where = f"{_us(cand)} against a floor of {_us(floor)} ({_pct(floor / cand)})"
    elif cand:
        where = f"{_us(cand)} (no roofline measured)"
    if cand and copy:
        where += f"; a device copy of its bytes takes {_us(copy)}"
    if cand and eager and not t["met"]:
        needed = eager / t["speedup"]
        where += f"; {_us(needed)} needed" + (", faster than that copy" if copy and needed < copy else "")
    return f"{_x(t['speedup'])} | {shape} | {measured} | {met} | {where} | {t.get('note') or '-'}"


# The roofline rule: where torch.compile sits this far above a case's roofline floor, the kernel should come within
# ROOFLINE_RULE_WITHIN of that floor.
ROOFLINE_RULE_COMPILE_ABOVE = 4.0
ROOFLINE_RULE_WITHIN = 1.5


def _why_missed(met: bool, copy: float | None) -> str:
    """A rule's reason where it needs no copy: "-" where met, or that no copy was timed; "" where the caller says
    whether a device copy of the same bytes misses the rule too (then no kernel moving those bytes meets it at
    that size) or the kernel is the limit."""
    if met:
        return "-"
    return "" if copy else "no device copy timed for this case"


def roofline_rule(rows: list[BenchRow]) -> list[dict[str, Any]]:
    """Every correct case where torch.compile is ROOFLINE_RULE_COMPILE_ABOVE x or more above its floor: the kernel's
    distance from the floor, whether it is within ROOFLINE_RULE_WITHIN x, and, where it is not, what the measurements
    say bounds it. A device copy of the case's bytes (timed where `--copy-floor` or bench's final evaluation ran)
    is what "bound by DRAM" means at that size: where the copy alone is beyond the rule, no kernel that moves those
    bytes can meet it."""
    out = []
    for r in rows:
        if not r.correct:
            continue
        for c in r.cases:
            floor, compiled, cand, copy = (
                c.get(k) for k in ("t_roofline_ms", "t_compile_ms", "t_candidate_ms", "t_copy_ms")
            )
            if not (floor and compiled and cand) or compiled / floor < ROOFLINE_RULE_COMPILE_ABOVE:
                continue
            met = cand / floor <= ROOFLINE_RULE_WITHIN
            why = _why_missed(met, copy) or (
                f"a device copy of its bytes alone is {copy / floor:.1f}x the floor"
                if copy / floor > ROOFLINE_RULE_WITHIN
                else f"{cand / copy:.1f}x a device copy of its bytes: the kernel, not DRAM, is the limit"
            )
            out.append(
                {
                    "problem": r.name,
                    "shape": c.get("shape"),
                    "compile_over_floor": compiled / floor,
                    "kernel_over_floor": cand / floor,
                    "copy_over_floor": copy / floor if copy else None,
                    "met": met,
                    "why": why,
                }
            )
    return out


# The 80%-of-HBM rule for memory-bound kernels: this share of the measured HBM bandwidth (a copy of 1 GiB) or more.
HBM_RULE_SHARE = 0.8


def hbm_rule(rows: list[BenchRow]) -> list[dict[str, Any]]:
    """Every correct case whose roofline floor is set by its bytes: the kernel's share of the measured bandwidth
    (its minimum bytes over its time), whether it reaches HBM_RULE_SHARE, and, where it does not, whether a device
    copy of the same bytes reaches it (if not, no kernel moving those bytes does at that size)."""
    out = []
    for r in rows:
        if not r.correct:
            continue
        for c in r.cases:
            t_bytes, cand, copy = (c.get(k) for k in ("t_bytes_ms", "t_candidate_ms", "t_copy_ms"))
            if not (c.get("memory_bound") and t_bytes and cand):
                continue
            share, copy_share = t_bytes / cand, (t_bytes / copy if copy else None)
            met = share >= HBM_RULE_SHARE
            why = _why_missed(met, copy) or (
                f"a device copy of its bytes reaches {100 * copy_share:.0f}%"
                + ("" if copy_share < HBM_RULE_SHARE else ": the kernel is the limit")
            )
            out.append(
                {
                    "problem": r.name,
                    "shape": c.get("shape"),
                    "share": share,
                    "copy_share": copy_share,
                    "met": met,
                    "why": why,
                }
            )
    return out


def _rule_table(title: str, columns: list[str], checked: list[dict[str, Any]], cells) -> list[str]:
    """A rule's Markdown table: the title with how many cases meet it, then a line per case checked (problem,
    case, `cells(case)`, met, why)."""
    if not checked:
        return []
    lines = [
        "",
        f"{title}: {sum(c['met'] for c in checked)} of {len(checked)} cases",
        "",
        "| " + " | ".join(["problem", "case", *columns, "where not, why"]) + " |",
        "|" + " --- |" * (len(columns) + 3),
    ]
    for c in checked:
        shape = " ".join(f"{k}={v}" for k, v in (c["shape"] or {}).items()) or "-"
        row = [c["problem"], shape, *cells(c), "yes" if c["met"] else "no", c["why"]]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _hbm_rule_lines(rows: list[BenchRow]) -> list[str]:
    return _rule_table(
        f"HBM rule (memory-bound cases at {100 * HBM_RULE_SHARE:.0f}% of the measured bandwidth or more)",
        ["kernel, share of measured bandwidth", "device copy, share", "reached?"],
        hbm_rule(rows),
        lambda c: [f"{100 * c['share']:.0f}%", f"{100 * c['copy_share']:.0f}%" if c["copy_share"] else "-"],
    )


def _roofline_rule_lines(rows: list[BenchRow]) -> list[str]:
    return _rule_table(
        f"Roofline rule (where torch.compile is {ROOFLINE_RULE_COMPILE_ABOVE:g}x or more above a case's floor, the"
        f" kernel within {ROOFLINE_RULE_WITHIN:g}x of it)",
        ["torch.compile / floor", "kernel / floor", "device copy / floor", "within?"],
        roofline_rule(rows),
        lambda c: [
            f"{c['compile_over_floor']:.1f}x",
            f"{c['kernel_over_floor']:.1f}x",
            f"{c['copy_over_floor']:.1f}x" if c["copy_over_floor"] else "-",
        ],
    )


def _us(ms: float) -> str:
    """Microseconds to three significant figures (a floor can be a few nanoseconds, a kernel milliseconds)."""
    us = 1000 * ms
    return f"{us:.1f} us" if us >= 10 else f"{us:.3g} us"


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.0f}%" if fraction >= 0.01 else "<1%"


def _ratio(base: float | None, t: float | None) -> float | None:
    return base / t if base and t else None


def counted(rows: list[BenchRow], keep_unreliable: bool = False) -> list[BenchRow]:
    """The rows the suite's figures count: without those whose figures a contended host made unreliable (an `ok`
    timed then, an `inconclusive`), unless kept."""
    return rows if keep_unreliable else [r for r in rows if not r.unreliable and r.status != Status.INCONCLUSIVE.value]


def fast_p(rows: list[BenchRow], p: float, key: str = "speedup_eager", keep_unreliable: bool = False) -> float:
    """Share of problems that are correct and more than p times faster (KernelBench's fast_p), over the rows
    `counted`."""
    rows = counted(rows, keep_unreliable)
    if not rows:
        return 0.0
    return sum(1 for r in rows if r.correct and (getattr(r, key) or 0) > p) / len(rows)


def _x(v: float | None) -> str:
    return f"{v:.2f}x" if v else "-"


BASELINE_NOTE = (
    "Baselines: a speedup is the baseline's time over the kernel's on each shape case, the geometric mean over the "
    "cases; eager is PyTorch's own reference on the same device, torch.compile its compiled form (where timed), and "
    "the faster of the two is taken per case (eager where torch.compile was not timed or was wrong)."
)


def _over(rows: list[BenchRow], keep: bool) -> str:
    """What fast_p was computed over, where unreliable rows were left out."""
    left = len(rows) - len(counted(rows, keep))
    return f" (over {len(rows) - left} of {len(rows)} problems: {left} unreliable left out)" if left else ""


def _unreliable_lines(rows: list[BenchRow], keep: bool) -> list[str]:
    """The rows a contended host left without a reliable figure, and whether fast_p counts them."""
    flagged = [r for r in rows if r.unreliable or r.status == Status.INCONCLUSIVE.value]
    if not flagged:
        return []
    counts = "counted in fast_p (--keep-unreliable)" if keep else "left out of fast_p (--keep-unreliable counts them)"
    lines = ["", f"Unreliable: these rows were timed on a contended host, their figures {counts}."]
    return lines + [f"- {r.name}: {r.unreliable or r.reason}" for r in flagged]


def markdown(rows: list[BenchRow], header: str, keep_unreliable: bool = False) -> str:
    lines = [
        header,
        "",
    ]
    verdicts = any(r.kernelbench_correct is not None for r in rows)  # rows from before the field: no column
    kb_head = " KernelBench's verdict |" if verdicts else ""
    lines += [
        BASELINE_NOTE,
        "",
        f"| problem | status |{kb_head} speedup vs eager | vs torch.compile | vs the faster of the two | worst case "
        "| roofline | seed / run |",
        "| --- " * (9 if verdicts else 8) + "|",
    ]
    for r in rows:
        roof = f"{100 * r.roofline:.0f}%" if r.roofline else "-"
        kb = f" {({True: 'correct', False: 'incorrect', None: '-'})[r.kernelbench_correct]} |" if verdicts else ""
        status = r.status + (", degraded" if r.degraded else "") + (", unreliable" if r.unreliable else "")
        lines.append(
            f"| {r.name} | {status} |{kb} {_x(r.speedup_eager)} | {_x(r.speedup_compile)} | {_x(r.speedup_best)} "
            f"| {_x(r.worst_case)} "
            f"| {roof} | {r.seed or '-'}{' / ' + r.run if r.run else ''} |"
        )
    if verdicts:
        lines += [
            "",
            "status is this harness's verdict (by default measured against a float64 run, on several input "
            "distributions); KernelBench's verdict is atol = rtol = 1e-2 on get_inputs() alone.",
        ]
    degraded = [r for r in rows if r.degraded]
    if degraded:
        lines += ["", "Degraded: these rows' evaluations ran without a guarantee the harness gives otherwise."]
        lines += [f"- {r.name}: {'; '.join(r.degraded)}" for r in degraded]
    targeted = [r for r in rows if r.target]
    if targeted:
        lines += [
            "",
            "Targets (speedup over eager on one shape case; where missed, the case's time against its roofline floor"
            " and, where timed, a device copy of the case's bytes):",
            "",
            "| problem | target | case | measured | met? | the case's time | target's source |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        lines += [f"| {r.name} | {_target_cells(r.target)} |" for r in targeted if r.target]
    lines += _unreliable_lines(rows, keep_unreliable)
    lines += _roofline_rule_lines(rows)
    lines += _hbm_rule_lines(rows)
    reviewed = [(r.name, note) for r in rows for note in r.review]
    if reviewed:
        lines += ["", "Listed for review by the harness (before trusting these rows' figures):", ""]
        lines += [f"- {name}: {note}" for name, note in reviewed]
    lines.append("")
    keys = [("speedup_eager", "eager")]
    if any(r.speedup_compile for r in rows):
        keys.append(("speedup_compile", "torch.compile"))
    for key, label in keys:
        lines.append(
            f"fast_p over {label}: "
            + ", ".join(f"p={p:g}: {fast_p(rows, p, key, keep_unreliable):.2f}" for p in (1.0, 1.5, 2.0))
            + _over(rows, keep_unreliable)
        )
    lines += scores.markdown(rows)
    return "\n".join(lines) + "\n"
