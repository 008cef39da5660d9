"""Who holds the GPU while a command runs: device memory per process, read through NVML from outside.

Runs COMMAND (a `kernelevolve bench`, `optimize` or `eval`), samples NVML's per-process device memory every
--interval seconds, and attributes each process by its ancestry: the command's own process (`parent`), one of its
children's process trees (a `group`: an evaluation's worker and its candidate's process, a spare worker), or a
process that is not the command's (`other`); a process seen in a group that has left the command's tree (killed,
reparented, releasing its memory) stays its group's (`exiting`). Writes every sample as JSON Lines and prints a
summary: the most any role held, and the most groups holding memory at once (one is the evaluation in flight;
more means a spare, a build or a process that outlived its evaluation held device memory).

    python benchmarks/gpu_census.py --out census.jsonl -- python -m kernelevolve bench SUITE --target cuda
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevolve.eval.launch import spawn  # noqa: E402
from kernelevolve.platforms import gpu_memory  # noqa: E402

MB = 2**20


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:160]
    except OSError:
        return ""


def attribute(root: int, held: dict[int, int], table: dict[int, tuple[int, int]], known: dict) -> list[dict]:
    """Each holding process with its role: `parent` (root itself), `group` (under one of root's children, named by
    that child's pid), `exiting` (seen in a group before, no longer under root: killed, reparented, its device
    memory still being released) or `other`. known: (pid, start time) -> group, kept across samples."""
    groups = {child: spawn.process_tree(child, table) for child, (ppid, _s) in table.items() if ppid == root}
    for child, tree in groups.items():
        known.update({(pid, start): child for pid, start in tree.items()})
    rows = []
    for pid, used in sorted(held.items()):
        group = next((child for child, tree in groups.items() if pid in tree), None)
        role = "parent" if pid == root else "group" if group is not None else "other"
        if role == "other" and pid in table and (pid, table[pid][1]) in known:
            role, group = "exiting", known[(pid, table[pid][1])]
        rows.append({"pid": pid, "mib": round(used / MB), "role": role, "group": group, "cmd": _cmdline(pid)})
    return rows


def summarize(samples: list[dict]) -> dict:
    """The most each role held in any sample, and the most groups holding memory at once."""
    peak = {"parent": 0, "group": 0, "exiting": 0, "other": 0}
    most_groups, most_groups_at = 0, None
    for s in samples:
        by_role = dict.fromkeys(peak, 0)
        for row in s["processes"]:
            by_role[row["role"]] += row["mib"]
        peak = {role: max(peak[role], by_role[role]) for role in peak}
        groups = {row["group"] for row in s["processes"] if row["group"] is not None and row["mib"] > 0}
        if len(groups) > most_groups:
            most_groups, most_groups_at = len(groups), s["t"]
    return {
        "samples": len(samples),
        "peak_mib": peak,
        "most_groups_holding": most_groups,
        "most_groups_at_s": most_groups_at,
        "device_used_peak_mib": max((s["device_used_mib"] or 0 for s in samples), default=0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="JSON Lines: one sample per line, the summary last")
    ap.add_argument("--interval", type=float, default=0.25)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("give the command to watch after --")
    if gpu_memory.processes(args.device) is None:
        sys.exit("gpu_census: NVML cannot answer here (no NVIDIA driver, or no nvidia-ml-py)")
    t0 = time.monotonic()
    proc = subprocess.Popen(command)
    stop: list[int] = []  # a SIGTERM (`timeout`) ends the command and still writes the summary
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    samples: list[dict] = []
    known: dict = {}
    with args.out.open("w") as out:
        while True:
            done = proc.poll() is not None
            held = gpu_memory.processes(args.device) or {}
            used = gpu_memory.device_memory(args.device)
            sample = {
                "t": round(time.monotonic() - t0, 2),
                "device_used_mib": round(used[0] / MB) if used else None,
                "processes": attribute(proc.pid, held, spawn.processes(), known),
            }
            samples.append(sample)
            out.write(json.dumps(sample) + "\n")
            if done:
                break
            if stop:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                continue  # one last sample, then the summary
            time.sleep(args.interval)
        summary = summarize(samples)
        out.write(json.dumps({"summary": summary, "command": command, "exit": proc.returncode}) + "\n")
    print(f"command exit {proc.returncode}; {summary['samples']} samples over {samples[-1]['t']:.0f} s")
    print("| role | peak MiB |\n| --- | --- |")
    for role, mib in summary["peak_mib"].items():
        print(f"| {role} | {mib} |")
    most, at = summary["most_groups_holding"], summary["most_groups_at_s"]
    print(f"most groups holding device memory at once: {most} (at {at} s)")
    print(f"device used, peak: {summary['device_used_peak_mib']} MiB")


if __name__ == "__main__":
    main()
