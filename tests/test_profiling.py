"""Profiling for the memory agent (eval/worker/profiling.py): parsing and the agent's use of a recorded profile, on
the CPU.

The collection itself needs a GPU (tests/test_gpu.py); here Triton's cache is filled by hand, the profiler's
events and ncu's CSV are recorded strings, and `ncu` is a stand-in script on PATH.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from types import SimpleNamespace

import pytest

from kernelevolve.agents import memory
from kernelevolve.eval.wire import EvalJob
from kernelevolve.eval.worker import launches, profiling
from kernelevolve.problem.candidate import load_candidate
from kernelevolve.result import CaseResult, EvalResult, Status
from tests.conftest import CANDIDATES, EXAMPLES, FIXTURES, ROOT

# Recorded shape of `ncu --csv --metrics ... --log-file F` (an older ncu adds a "Kernel Time" column; values
# carry thousands separators; the duration's unit varies).
NCU_CSV = """==PROF== Connected to process 4242 (/usr/bin/python3.11)
==PROF== Profiling "_softmax_rows_kernel" - 0: 0%....50%....100% - 5 passes
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.11","127.0.0.1","_softmax_rows_kernel","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","91.37"
"0","4242","python3.11","127.0.0.1","_softmax_rows_kernel","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","38.14"
"0","4242","python3.11","127.0.0.1","_softmax_rows_kernel","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","launch__occupancy_limit_registers","block","2"
"0","4242","python3.11","127.0.0.1","_softmax_rows_kernel","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","launch__registers_per_thread","register/thread","64"
"0","4242","python3.11","127.0.0.1","_softmax_rows_kernel","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","23.05"
"1","4242","python3.11","127.0.0.1","void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, T2, T3)","1","7","(128, 1, 1)","(1,024, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","2,272"
"1","4242","python3.11","127.0.0.1","void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, T2, T3)","1","7","(128, 1, 1)","(1,024, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","n/a"
"""  # noqa: E501

OLD_NCU_CSV = """"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value"
"0","7","python","127.0.0.1","gemm_kernel","2024-Nov-13 18:14:36","1","7","Command line profiler metrics","gpu__time_duration.sum","msecond","1.5"
"0","7","python","127.0.0.1","gemm_kernel","2024-Nov-13 18:14:36","1","7","Command line profiler metrics","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","88.1"
"""  # noqa: E501


def test_ncu_csv_parses_into_one_dict_per_kernel():
    kernels = profiling.parse_ncu_csv(NCU_CSV)
    assert [k["name"] for k in kernels][0] == "_softmax_rows_kernel" and len(kernels) == 2
    softmax, fill = kernels
    assert softmax["dram_pct"] == pytest.approx(91.37) and softmax["sm_pct"] == pytest.approx(23.05)
    assert softmax["time_us"] == pytest.approx(38.14) and softmax["registers"] == 64
    assert softmax["occupancy_limit_registers"] == 2 and softmax["block"] == "(256, 1, 1)"
    assert fill["time_us"] == pytest.approx(2.272) and "dram_pct" not in fill  # "n/a" is left out
    (gemm,) = profiling.parse_ncu_csv(OLD_NCU_CSV)
    assert gemm["time_us"] == pytest.approx(1500.0) and gemm["sm_pct"] == pytest.approx(88.1)
    assert profiling.parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n") == []
    assert profiling.parse_ncu_csv("") == []


def test_ncu_missing_gives_a_note(monkeypatch):
    monkeypatch.setattr(profiling.shutil, "which", lambda name: None)
    assert profiling.ncu_metrics("p.py", "c.py", 1) == "ncu not found on PATH"


def test_ncu_subprocess_with_a_stand_in_ncu(tmp_path, monkeypatch):
    """The command line and the parsing end to end: a fake `ncu` writes the recorded CSV to --log-file and checks
    it was asked to run the probe module on the problem and candidate."""
    seen = tmp_path / "argv.json"
    fake = tmp_path / "ncu"
    fake.write_text(
        f"#!{sys.executable}\nimport json, sys\nargv = sys.argv[1:]\n"
        f"json.dump(argv, open({str(seen)!r}, 'w'))\n"
        f"open(argv[argv.index('--log-file') + 1], 'w').write({NCU_CSV!r})\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    kernels = profiling.ncu_metrics("/p/problem.py", "/c/cand.py", 7, 1)
    assert isinstance(kernels, list) and kernels[0]["dram_pct"] == pytest.approx(91.37)
    argv = json.loads(seen.read_text())
    assert argv[argv.index("--metrics") + 1].split(",") == list(profiling.NCU_METRICS)
    assert argv[argv.index("--target-processes") + 1] == "all" and "--csv" in argv
    probe = argv[argv.index("-m") + 1 :]
    assert probe[:5] == ["kernelevolve.eval.worker.ncu_probe", "/p/problem.py", "/c/cand.py", "7", "1"]
    fake.write_text("#!/bin/sh\necho '==ERROR== the profiler failed'\nexit 1\n")
    note = profiling.ncu_metrics("/p/problem.py", "/c/cand.py", 7, 1)
    assert isinstance(note, str) and "ncu profiled no kernel (exit status 1)" in note and "failed" in note
    fake.write_text("#!/bin/sh\nsleep 5\n")
    assert profiling.ncu_metrics("/p/problem.py", "/c/cand.py", 7, 1, timeout_s=0.5) == "ncu timed out after 0.5 s"


def _fake_compiled(name: str, regs: int | None, spills: int | None, shared: int, warps: int, stages: int):
    meta = SimpleNamespace(name=name, shared=shared, num_warps=warps, num_stages=stages)
    compiled = SimpleNamespace(name=name, metadata=meta)
    if regs is not None:  # set by Triton when the binary is loaded
        compiled.n_regs, compiled.n_spills = regs, spills
    return compiled


def test_triton_metadata_reads_the_candidates_compiled_kernels():
    pytest.importorskip("triton")
    module = load_candidate(EXAMPLES / "softmax" / "candidate_triton.py")
    kernel = module._softmax_rows_kernel
    assert profiling.triton_kernel_metadata(module) == []  # nothing compiled yet
    # Triton 3.x: device -> (kernel cache, ...); assigning a device's entry does not build a binder.
    kernel.device_caches[0] = (
        {
            "k1": _fake_compiled("_softmax_rows_kernel", 40, 0, 0, 8, 3),
            "k2": _fake_compiled("_softmax_rows_kernel", None, None, 16384, 4, 1),
        },
        {},
        None,
        None,
        None,
    )
    try:
        info = profiling.triton_kernel_metadata(module)
    finally:
        kernel.device_caches.clear()
    assert info[0] == {
        "kernel": "_softmax_rows_kernel",
        "name": "_softmax_rows_kernel",
        "n_regs": 40,
        "n_spills": 0,
        "shared": 0,
        "num_warps": 8,
        "num_stages": 3,
    }
    assert info[1]["n_regs"] is None and info[1]["shared"] == 16384 and len(info) == 2
    # Older Triton: kernel.cache[device] = {key: CompiledKernel}; and an autotuner's wrapped kernel.
    old = SimpleNamespace(cache={0: {"k": _fake_compiled("old", 32, 2, 0, 4, 2)}}, fn=kernel.fn)
    assert profiling._compiled_kernels(old)[0].n_spills == 2
    assert profiling._jit_function(SimpleNamespace(fn=kernel)) is kernel
    assert profiling._jit_function(len) is None


def test_triton_metadata_skips_kernels_defined_elsewhere(tmp_path):
    pytest.importorskip("triton")
    helper = tmp_path / "helper.py"
    helper.write_text("import triton\n\n@triton.jit\ndef imported_kernel(x):\n    pass\n")
    cand = tmp_path / "cand.py"
    cand.write_text(
        "import sys, importlib.util\nimport torch\n"
        f"spec = importlib.util.spec_from_file_location('helper_mod', {str(helper)!r})\n"
        "helper = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(helper)\n"
        "imported_kernel = helper.imported_kernel\n"
        "class ModelNew(torch.nn.Module):\n    pass\n"
    )
    module = load_candidate(cand)
    module.imported_kernel.device_caches[0] = ({"k": _fake_compiled("imported_kernel", 1, 0, 0, 1, 1)},)
    assert profiling.triton_kernel_metadata(module) == []


def test_kernel_summary_and_the_shared_profiler_helper(monkeypatch):
    events = [("_softmax_rows_kernel", 30.0), ("Memset (Device)", 1.0), ("_softmax_rows_kernel", 31.5)]
    summary = profiling.summarise_kernels(events)
    assert summary["launches"] == 3
    assert summary["kernels"][0] == {"name": "_softmax_rows_kernel", "count": 2, "device_us": 61.5}
    monkeypatch.setattr(launches, "device_events", lambda call, device: events)
    assert launches.device_kernels(lambda: None, None) == [name for name, _ in events]
    assert profiling.kernel_profile(lambda: None, None) == {**summary, "own_share": None}
    own = profiling.kernel_profile(lambda: None, None, {"_softmax_rows_kernel"})
    assert own["own_share"] == pytest.approx(61.5 / 62.5, abs=1e-4)
    monkeypatch.setattr(launches, "device_events", lambda call, device: None)
    assert launches.device_kernels(lambda: None, None) is None and profiling.kernel_profile(lambda: None, None) is None


def test_own_share_of_device_time_exposes_a_decoy_kernel():
    """A candidate that launches a copy kernel of its own and leaves the work to torch's softmax: most of the
    device time is not its own (the harness lists it for review; the verdict is not changed)."""
    decoy = [("_copy_kernel", 3.0), ("void at::native::cunn_SoftMaxForward<4, float>", 27.0)]
    assert profiling.own_share(decoy, {"_copy_kernel"}) == pytest.approx(0.1)
    assert profiling.own_share(decoy, set()) is None and profiling.own_share([], {"_copy_kernel"}) is None


def test_collect_is_best_effort_and_off_means_none():
    import torch

    module = SimpleNamespace(__name__="candidate", __file__="/nowhere.py")
    assert profiling.collect("off", module, lambda: None, torch.device("cpu")) is None
    # No CUDA here: the profiler fails, there is no Triton kernel, so nothing is recorded, and nothing raises.
    assert profiling.collect("auto", module, lambda: None, torch.device("cpu")) is None

    def boom() -> None:
        raise SystemExit(3)

    assert profiling.collect("auto", module, boom, torch.device("cpu")) is None
    assert EvalJob(problem_path="p", candidate_path="c", target="cuda", seed=1).profile == "auto"


def test_cpu_target_and_profile_off_leave_no_profile(cpu_evaluator, relu_problem):
    for profile in ("auto", "off"):
        result = cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_ok.py", trials=1, profile=profile)
        assert result.status is Status.OK, result.reason
        assert result.profile is None and "profile" not in result.stages
    with pytest.raises(ValueError, match="profile must be"):
        cpu_evaluator.evaluate(relu_problem, CANDIDATES / "relu_ok.py", profile="nsys")


def test_cli_profile_option():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelevolve",
            "eval",
            str(FIXTURES / "scale_shift.py"),
            str(CANDIDATES / "scale_shift_ok.py"),
            "--target",
            "cpu",
            "--profile",
            "bogus",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "--profile" in p.stderr
    from typer.testing import CliRunner

    from kernelevolve.cli import app
    from kernelevolve.cli.eval_cmd import _profile_line

    line = _profile_line({**SPILLING, "ncu": profiling.parse_ncu_csv(NCU_CSV)})
    assert "_mm: 255 regs, 96 spills" in line and "2 launches per forward call" in line
    assert "ncu _softmax_rows_kernel: DRAM 91.37%" in line
    assert _profile_line({"triton": [], "ncu": "ncu not found on PATH"}) == "ncu not found on PATH"
    runner = CliRunner()
    for command in ("eval", "optimize"):
        out = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
        assert "--profile" in out.output and "ncu" in out.output


# ---- the memory agent on recorded profiles ----


def _ok(profile: dict | None, t_ms: float = 0.5) -> EvalResult:
    return EvalResult(
        status=Status.OK,
        correct=True,
        cases=[CaseResult(shape={"N": 4096}, correct=True, t_candidate_ms=t_ms, t_eager_ms=t_ms, speedup=1.0)],
        profile=profile,
    ).finalize()


SPILLING = {
    "triton": [
        {"kernel": "_mm", "name": "_mm", "n_regs": 255, "n_spills": 96, "shared": 0, "num_warps": 4, "num_stages": 1},
        {"kernel": "_mm", "name": "_mm", "n_regs": 128, "n_spills": 0, "shared": 0, "num_warps": 4, "num_stages": 1},
        {"kernel": "_mm2", "name": "_mm2", "n_regs": 96, "n_spills": 0, "shared": 196608, "num_warps": 8,
         "num_stages": 5},
    ],
    "kernels": [{"name": "_mm", "count": 1, "device_us": 400.0}, {"name": "_mm2", "count": 1, "device_us": 100.0}],
    "launches": 2,
}  # fmt: skip


def test_memory_agent_names_register_spills_shared_memory_and_the_dominant_kernel():
    a = memory.analyse(1, _ok(SPILLING))
    spill = [x for x in a.advice if "spills registers" in x]
    assert (
        len(spill) == 1
        and "`_mm`" in spill[0]
        and "96 spilled" in spill[0]
        and "smaller BLOCK or fewer warps" in spill[0]
    )
    assert any("192 KiB of shared memory" in x and "5 stages" in x for x in a.advice)
    assert any("`_mm` takes 80% of the device time" in x for x in a.advice)
    assert a.profile["triton"][0] == {
        "kernel": "_mm",
        "n_regs": 255,
        "n_spills": 96,
        "shared": 0,
        "num_warps": 4,
        "num_stages": 1,
    }
    assert a.profile["dominant"] == {"name": "_mm", "share": 0.8} and a.profile["launches"] == 2
    assert "register spills in _mm" in a.summary and "2 launches" in a.summary
    # What the store keeps and the driver rebuilds the analysis from.
    again = memory.Analysis(**{k: v for k, v in a.to_dict().items() if k in memory.Analysis.__annotations__})
    assert again == a
    assert any("spills registers" in d for d in memory.directives(a, []))


def test_memory_agent_calls_many_short_launches_launch_bound():
    profile = {
        "triton": [],
        "kernels": [
            {"name": "_add", "count": 6, "device_us": 18.0},
            {"name": "_mul", "count": 6, "device_us": 12.0},
        ],
        "launches": 12,
    }
    a = memory.analyse(1, _ok(profile))
    assert a.bottleneck == "launch"
    assert any(x.startswith("launch-bound: fuse the 12 launches") for x in a.advice)
    long_kernels = {"kernels": [{"name": "_big", "count": 3, "device_us": 3000.0}], "launches": 3}
    a = memory.analyse(2, _ok(long_kernels))
    assert a.bottleneck != "launch" and not any("launch-bound" in x for x in a.advice)


def test_memory_agent_reads_the_ncu_limiter():
    kernels = profiling.parse_ncu_csv(NCU_CSV)
    a = memory.analyse(1, _ok({"triton": [], "kernels": [], "launches": 1, "ncu": kernels}))
    assert a.bottleneck == "memory" and a.profile["ncu"]["limiter"] == "dram"
    assert any("DRAM-bound" in x and "91% of peak DRAM" in x for x in a.advice)
    assert any("limit `_softmax_rows_kernel` to 2 block(s) per SM" in x for x in a.advice)
    assert "DRAM-bound (ncu)" in a.summary
    sm = [{"name": "gemm", "time_us": 100.0, "sm_pct": 85.0, "dram_pct": 20.0}]
    assert memory.analyse(2, _ok({"ncu": sm})).bottleneck == "compute"
    idle = [{"name": "gemm", "time_us": 100.0, "sm_pct": 15.0, "dram_pct": 20.0}]
    assert memory.analyse(3, _ok({"ncu": idle})).bottleneck == "latency"
    a = memory.analyse(4, _ok({"triton": [], "ncu": "ncu not found on PATH"}))
    assert a.profile == {"ncu": "ncu not found on PATH"} and a.bottleneck == "unknown"
    # Timing says the kernel runs for microseconds: that launch-bound verdict stands over ncu's limiter.
    assert memory.analyse(5, _ok({"ncu": kernels}, t_ms=0.01)).bottleneck == "launch"


def test_memory_agent_on_a_profile_recorded_with_nsight_compute_on_the_h200():
    """The softmax example's profile from a real ncu run on an H200 (2026-11-30)."""
    record = ROOT / "tests" / "fixtures" / "ncu_profile_softmax.json"
    profile = json.loads(record.read_text())["ncu"]["profile"]
    facts, advice, bottleneck = memory.profile_facts(profile)
    assert bottleneck == "memory"
    assert facts["ncu"]["limiter"] == "dram" and facts["ncu"]["dram_pct"] > 70
    assert any("DRAM-bound" in a and "_softmax_rows_kernel" in a for a in advice), advice


def test_memory_agent_without_a_profile_is_unchanged():
    a = memory.analyse(1, _ok(None))
    assert a.profile is None and "profile" not in a.summary
    failed = EvalResult(status=Status.RUNTIME_ERROR, correct=False, reason="x", profile=SPILLING).finalize()
    assert memory.analyse(2, failed).profile is None


def test_memory_agent_names_work_outside_the_candidates_kernels():
    profile = {"kernels": [{"name": "aten_copy", "count": 2, "device_us": 40.0}], "launches": 3, "own_share": 0.2}
    a = memory.analyse(1, _ok(profile))
    assert a.profile["own_share"] == 0.2
    assert any("only 20% of the device time is in the candidate's own kernels" in x for x in a.advice), a.advice
    a = memory.analyse(2, _ok({**profile, "own_share": 0.95}))
    assert not any("own kernels" in x for x in a.advice)


def test_profiling_cannot_change_the_verdict():
    """The candidate runs again while it is profiled, after the last integrity check: whatever it does to the
    result then is discarded, and only the profile (and a review note for a decoy-like share) is kept."""
    from kernelevolve.eval.worker import harness
    from kernelevolve.result import CaseResult, EvalResult, Status

    result = EvalResult(
        status=Status.OK, correct=True, cases=[CaseResult(shape={}, correct=True, t_candidate_ms=1.0)]
    ).finalize()

    def hostile_collect(*args, **kwargs):
        result.cases[0].timing.candidate.median_ms = 1e-6  # what frame-walking candidate code could do meanwhile
        result.speedup = 1000.0
        return {"kernels": [], "launches": 1, "own_share": 0.1}

    stages: dict[str, float] = {}
    kept = harness.profiled(result, hostile_collect, stages)
    assert kept.cases[0].timing.candidate.median_ms == 1.0 and kept.speedup != 1000.0
    assert kept.profile == {"kernels": [], "launches": 1, "own_share": 0.1} and "profile" in stages
    assert any("own kernels take 10%" in note for note in kept.review)

    def failing_collect(*args, **kwargs):
        result.speedup = 1000.0
        raise SystemExit(3)

    result.speedup = 2.0
    kept = harness.profiled(result, failing_collect, {})
    assert kept.profile is None and kept.speedup == 2.0


def test_ncu_probe_names_a_missing_shape_case(capsys):
    from kernelevolve.eval.worker import ncu_probe

    problem = str(EXAMPLES / "softmax" / "problem.py")
    candidate = str(EXAMPLES / "softmax" / "candidate_triton.py")
    assert ncu_probe.main([problem, candidate, "1", "0", "0", "7"]) == 2
    assert "no shape case 7 (it has 3)" in capsys.readouterr().err
