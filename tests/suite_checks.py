"""Shared by the suite's kernel tests: a problem file cut to small shape cases, and a check script run where
Triton interprets its kernels."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SUITE = Path(__file__).resolve().parents[1] / "suites" / "ranking"

# Small shape cases per problem, for the seeds' checks on the CPU.
SMALL_CASES: dict[str, list[dict[str, int]]] = {
    "mapid": [{"BATCH": 3000, "TABLE": 1000}, {"BATCH": 100, "TABLE": 2}],
    "merge_bucketized_dense": [
        {"BATCH": 500, "FEATURES": 2, "BORDERS": 4},
        {"BATCH": 300, "FEATURES": 13, "BORDERS": 10},
    ],
    "batch_event_truncate": [
        {"FEATURES": 3, "BATCH": 5, "EVENTS": 40, "MAX_LEN": 20},
        {"FEATURES": 2, "BATCH": 3, "EVENTS": 300, "MAX_LEN": 200},
    ],
    "wukong_fm": [{"BATCH": 3, "N": 24, "D": 20, "K": 300}, {"BATCH": 2, "N": 70, "D": 64, "K": 40}],
    "interformer_pffn": [{"ROWS": 40, "D": 96, "K": 96}, {"ROWS": 17, "D": 300, "K": 50}],
    "rmsnorm2d_fwd": [{"ROWS": 100, "COLS": 96}, {"ROWS": 3, "COLS": 5000}],
    # 3000 x 128 takes two programs in the interpreter: the cross-program dw reduction is exercised.
    "rmsnorm2d_bwd": [{"ROWS": 100, "COLS": 96}, {"ROWS": 3000, "COLS": 128}, {"ROWS": 3, "COLS": 5000}],
    "conv1d_fp16": [
        {"B": 3, "CIN": 20, "COUT": 40, "L": 50},
        {"B": 2, "CIN": 96, "COUT": 96, "L": 200},
        {"B": 2, "CIN": 64, "COUT": 128, "L": 100},
    ],
    "conv1d_fp32": [
        {"B": 3, "CIN": 20, "COUT": 40, "L": 50},
        {"B": 2, "CIN": 96, "COUT": 96, "L": 200},
        {"B": 2, "CIN": 64, "COUT": 128, "L": 100},
    ],
    "jagged_sum": [{"BATCH": 12, "MEAN_LEN": 20, "DIM": 96}, {"BATCH": 3, "MEAN_LEN": 100, "DIM": 300}],
}


def small_case_problem(directory: Path, name: str, cases: list[dict]) -> Path:
    """The suite problem `name` with SHAPE_CASES replaced by `cases`, written under `directory`/`name`."""
    path = directory / name / "problem.py"
    path.parent.mkdir(parents=True)
    source = (SUITE / name / "problem.py").read_text()
    path.write_text(f"{source}\n\n# Small cases for the CPU test.\nSHAPE_CASES = {cases!r}\n")
    return path


# What every check script starts with: sys, torch, and load(name, path) for a problem or kernel file.
PREAMBLE = """
import importlib.util, sys
import torch
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
"""


def run_interpreted(script: str, *args: object) -> str:
    """Runs PREAMBLE + `script` in a fresh process with TRITON_INTERPRET=1 (Triton reads it when a kernel is
    decorated, and other tests in the same pytest process may already have loaded Triton's compiled path); it must
    print ok."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    cmd = [sys.executable, "-c", PREAMBLE + script, *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr[-3000:]
    return p.stdout


# Runs one check script once per argument list in a single process (one Python, torch and Triton start instead of
# one per run): each run gets fresh globals, its own sys.argv and the PREAMBLE, so nothing a run sets (a module's
# launch constants, the seed) reaches the next; every check script loads its kernel module afresh. Prints one JSON
# line per run: its id, whether it printed ok, and its output or traceback.
_EACH = """
import contextlib, io, json, sys, traceback
script, runs = sys.argv[1], json.loads(sys.argv[2])
for run_id, args in runs:
    sys.argv = ["-c", *args]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(script, "<check " + run_id + ">", "exec"), {"__name__": "__main__"})
        ok, text = "ok" in out.getvalue(), out.getvalue()
    except BaseException:
        ok, text = False, out.getvalue() + traceback.format_exc()
    print("RESULT " + json.dumps([run_id, ok, text[-3000:]]), flush=True)
"""


def run_interpreted_each(script: str, runs: dict[str, list[object]], timeout: float = 600) -> dict[str, str | None]:
    """Runs PREAMBLE + `script` once per entry of `runs` (id: its arguments), all in one fresh process with
    TRITON_INTERPRET=1 (as run_interpreted). Returns id: None where the run printed ok, else its output and
    traceback; a run that did not report (the process died) maps to the process's stderr."""
    import json

    env = {**os.environ, "TRITON_INTERPRET": "1"}
    listed = json.dumps([[run_id, [str(a) for a in args]] for run_id, args in runs.items()])
    p = subprocess.run(
        [sys.executable, "-c", _EACH, PREAMBLE + script, listed],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    reported = {}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            run_id, ok, text = json.loads(line[len("RESULT ") :])
            reported[run_id] = None if ok else text
    died = f"the check process exited with status {p.returncode} before reporting:\n{p.stderr[-3000:]}"
    return {run_id: reported.get(run_id, died) for run_id in runs}


def assert_each_run_ok(script: str, runs: dict[str, list[object]]) -> None:
    """run_interpreted_each, asserting that every run printed ok; the message names each run that did not, with its
    traceback. (One test for all of a file's runs: as separate tests, pytest-xdist could hand them to both workers,
    and a shared fixture would start the process on each.)"""
    failed = {run_id: text for run_id, text in run_interpreted_each(script, runs).items() if text is not None}
    assert not failed, "\n\n".join(f"--- {run_id}:\n{text}" for run_id, text in failed.items())


def assert_interpreted_candidate_correct(
    evaluator, directory: Path, name: str, candidate: Path, cases: list[dict] | None = None
) -> None:
    """A Triton candidate for suite problem `name`, through the real harness on its small cases (interpreted), or
    on `cases`."""
    from kernelevolve.problem.problem import load_problem
    from kernelevolve.result import Status

    cases = cases or SMALL_CASES[name]
    problem = load_problem(small_case_problem(directory, name, cases))
    result = evaluator.evaluate(problem, candidate, trials=2, require_kernel=True)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.languages == ["triton"] and result.interpreted
    assert len(result.cases) == len(cases) and all(c.correct for c in result.cases)
