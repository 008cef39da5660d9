"""One table from several `kernelevolve bench` runs: the suite as it stands when its problems were searched in
different runs (a later file's row for a problem replaces an earlier one's). Prints bench's Markdown (the rows,
the targets, the roofline rule, fast_p) and the geometric means over all rows, from the JSON alone: nothing is
re-measured. A bench run before the harness timed copies has no device copy per case: `--copies` takes them
from `copy_floor.py` runs (its rows name the kernel's folder, the problem, and the case's shape; a copy's time
depends on the case's bytes only, not on the kernel timed beside it) for the cases that lack one.

    python benchmarks/suite_table.py docs/benchmarks/data/ranking_search_2026-11-30_run13a.json \
        docs/benchmarks/data/ranking_search_2026-11-30_run13b.json ... --copies copy_floor.json ... > table.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelevolve.suites.bench import BenchRow, _geomean, markdown  # noqa: E402


def merged_rows(paths: list[Path]) -> list[BenchRow]:
    rows: dict[str, BenchRow] = {}
    for path in paths:
        try:
            found = json.loads(path.read_text())["rows"]
            for row in found:
                rows[row["name"]] = BenchRow(**row)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"{path}: not a `kernelevolve bench` results.json ({type(e).__name__}: {e})") from None
    return list(rows.values())


def fill_copies(rows: list[BenchRow], paths: list[Path]) -> int:
    """Cases without a t_copy_ms take copy_floor.py's for the same problem and shape; returns how many did."""
    copies = {}
    for path in paths:
        for c in json.loads(path.read_text())["rows"]:
            copies[(Path(c["file"]).parent.name, json.dumps(c["shape"], sort_keys=True))] = c["copy"]["ms"]
    filled = 0
    for row in rows:
        for case in row.cases:
            ms = copies.get((row.name, json.dumps(case.get("shape"), sort_keys=True)))
            if not case.get("t_copy_ms") and ms:
                case["t_copy_ms"] = ms
                filled += 1
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
        mean = _geomean([getattr(r, key) for r in rows if r.correct])
        print(f"geometric mean over {label}: " + (f"{mean:.2f}x" if mean else "-") + f" ({len(rows)} problems)")


if __name__ == "__main__":
    main()
