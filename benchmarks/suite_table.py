"""One table from several `kernelevolve bench` runs: the suite as it stands when its problems were searched in
different runs (a later file's row for a problem replaces an earlier one's). Prints bench's Markdown (the rows,
the targets, the roofline rule, fast_p) and the geometric means over all rows, from the JSON alone: nothing is
re-measured.

    python benchmarks/suite_table.py docs/benchmarks/data/ranking_search_2026-11-30_run13a.json \
        docs/benchmarks/data/ranking_search_2026-11-30_run13b.json ... > table.md
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
        for row in json.loads(path.read_text())["rows"]:
            rows[row["name"]] = BenchRow(**row)
    return list(rows.values())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", type=Path, nargs="+", help="bench results.json files, oldest first")
    args = ap.parse_args()
    rows = merged_rows(args.results)
    header = "# The suite from " + ", ".join(p.name for p in args.results)
    print(markdown(rows, header))
    for key, label in (("speedup_eager", "eager"), ("speedup_compile", "torch.compile")):
        mean = _geomean([getattr(r, key) for r in rows if r.correct])
        print(f"geometric mean over {label}: " + (f"{mean:.2f}x" if mean else "-") + f" ({len(rows)} problems)")


if __name__ == "__main__":
    main()
