"""The table of docs/benchmarks/gpu_memory.md from one run of benchmarks/kb_memory.sh: per problem its verdict, the
harness's peak device memory, and any check skipped or memory note; then who held the device, from the census.

    python benchmarks/memory_table.py CENSUS.jsonl[.gz] BENCH_RESULTS.json
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from gpu_census import summarize

NOTES = ("skipped", "other processes held", "judge's process", "harness limit")


def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return f.read().splitlines()


def table(census: list[dict], rows: list[dict]) -> str:
    out = ["| problem | status | harness peak | notes |", "| --- | --- | --- | --- |"]
    for r in rows:
        peak = r.get("harness_peak_bytes")
        notes = [n for n in r.get("review", []) + r.get("degraded", []) if any(k in n for k in NOTES)]
        if r["status"] != "ok":
            notes.insert(0, r.get("reason", "")[:200])
        shown = f"{peak / 1e9:.1f} GB" if peak else "-"
        out.append(f"| {r['name']} | {r['status']} | {shown} | {'; '.join(notes) or '-'} |")
    samples = [c for c in census if "processes" in c]
    if samples:
        summary = summarize(samples)  # also where the census was cut before it wrote its own
        peak = summary["peak_mib"]
        out += [
            "",
            "| who held device memory (census, most at any sample) | MiB |",
            "| --- | --- |",
            *(f"| {role} | {mib} |" for role, mib in peak.items()),
            f"| evaluations holding memory at once, most | {summary['most_groups_holding']} |",
            f"| device in use, most | {summary['device_used_peak_mib']} |",
        ]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("census", type=Path)
    ap.add_argument("bench", type=Path)
    args = ap.parse_args()
    census = [json.loads(line) for line in _lines(args.census) if line.strip()]
    print(table(census, json.loads(args.bench.read_text())["rows"]))


if __name__ == "__main__":
    main()
