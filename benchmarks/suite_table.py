"""One table from several `kernelevolve bench` runs: the suite as it stands when its problems were searched in
different runs (a later file's row for a problem replaces an earlier one's). Prints bench's Markdown (the rows,
the targets, the roofline and HBM rules, fast_p) and the geometric means over all rows, from the JSON alone: nothing is
re-measured. A bench run before the harness timed copies has no device copy per case: `--copies` takes them
from `copy_floor.py` runs (its rows name the kernel's folder, the problem, and the case's shape; a copy's time
depends on the case's bytes only, not on the kernel timed beside it) for the cases that lack one.

    python benchmarks/suite_table.py OLDEST.json ... NEWEST.json --copies copy_floor.json ... > table.md

(bench's results files, e.g. those in docs/benchmarks/data/, oldest first.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelevolve.eval.worker.speed import measured_bytes_ms, roofline_parts_ms  # noqa: E402
from kernelevolve.platforms.peaks import Peaks  # noqa: E402
from kernelevolve.result import geomean  # noqa: E402
from kernelevolve.suites.bench import BenchRow, markdown  # noqa: E402


def _read(path: Path, what: str, parse):
    """parse(JSON of path), or exit naming the file and what it should have been."""
    try:
        return parse(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"{path}: not {what} ({type(e).__name__}: {e})") from None


def merged_rows(paths: list[Path]) -> list[BenchRow]:
    rows: dict[str, BenchRow] = {}
    for path in paths:
        for row in _read(path, "a `kernelevolve bench` results.json", lambda d: [BenchRow(**r) for r in d["rows"]]):
            rows[row.name] = row
    return list(rows.values())


def _copy_rows(found: dict) -> list[tuple[dict, Peaks]]:
    peaks = Peaks(**{**found["peaks"], "datasheet": tuple(found["peaks"]["datasheet"] or ()) or None})
    return [
        ({"key": (Path(c["file"]).parent.name, json.dumps(c["shape"], sort_keys=True)), **c}, peaks)
        for c in found["rows"]
    ]


def fill_copies(rows: list[BenchRow], paths: list[Path]) -> int:
    """Cases without a t_copy_ms take copy_floor.py's for the same problem and shape; where their run did not
    record them (bench runs before the HBM rule), cases also take the bytes' time at the measured bandwidth and
    whether the bytes set the floor, from the minimum bytes and the peaks that copy_floor.py recorded. Returns how
    many cases took a copy."""
    copies = {}
    for path in paths:
        for c, peaks in _read(path, "a `copy_floor.py` JSON", _copy_rows):
            copies[c["key"]] = (c, peaks)
    filled = 0
    for row in rows:
        for case in row.cases:
            hit = copies.get((row.name, json.dumps(case.get("shape"), sort_keys=True)))
            if hit is None:
                continue
            c, peaks = hit
            if not case.get("t_copy_ms"):
                case["t_copy_ms"] = c["copy"]["ms"]
                filled += 1
            floor = case.get("t_roofline_ms")
            if case.get("t_bytes_ms") is None:
                case["t_bytes_ms"] = measured_bytes_ms(c["min_bytes"], peaks)
            if case.get("memory_bound") is None and floor:
                case["memory_bound"] = roofline_parts_ms(c["min_bytes"], None, peaks)[0] >= 0.999 * floor
    return filled


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", type=Path, nargs="+", help="bench results.json files, oldest first")
    ap.add_argument("--copies", type=Path, nargs="*", default=[], help="copy_floor.py JSON files")
    args = ap.parse_args()
    rows = merged_rows(args.results)
    header = "# The suite from " + ", ".join(p.name for p in args.results)
    if args.copies:
        n = fill_copies(rows, args.copies)
        header += f"\n\nDevice copies for {n} cases from " + ", ".join(p.name for p in args.copies)
    print(markdown(rows, header))
    for key, label in (("speedup_eager", "eager"), ("speedup_compile", "torch.compile")):
        values = [v for r in rows if r.correct and (v := getattr(r, key))]
        mean = f"{geomean(values):.2f}x" if values else "-"
        print(f"geometric mean over {label}: {mean} ({len(values)} of {len(rows)} problems)")


if __name__ == "__main__":
    main()
