"""benchmarks/scale_device.py (the one-GPU part of docs/benchmarks/scale.md) runs on the CPU without Ray, and its
records say what they should: the busy share, the GPU's time in a compiler while work was queued, the builds."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from tests.conftest import ROOT


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scale_device_runs_every_part_on_the_cpu_without_ray(tmp_path, capsys):
    """Tiny sizes, real CPU evaluations (the kb_relu fixture): every part measured once, the JSON and the table."""
    had_ray = "ray" in sys.modules  # another test in this process may have imported it
    scale_device = load("scale_device")
    out = tmp_path / "scale_device.json"
    sizes = ["--evaluations", "1", "--budget-one", "1", "--budget-four", "1", "--build-budget", "2"]
    assert scale_device.main(["--target", "cpu", "--out", str(out), "--seconds", "1", *sizes]) == 0
    assert had_ray or "ray" not in sys.modules
    data = json.loads(out.read_text())
    assert data["target"] == "cpu" and len(data["rate"]["per_minute"]) == 2  # two, whatever the time left
    assert len(data["per_eval"]["problems"]) == 1 and len(data["busy"]["runs"]) == 2  # one repeat: no time
    assert data["rate"]["per_minute"][0] > 0 and data["rate"]["device_s_median"] > 0
    runs = data["busy"]["runs"]
    assert [r["searches"] for r in runs] == [1, 4]
    assert len(runs[1]["evaluations"]) >= 4 and all(0 < r["share"] <= 1 for r in runs)
    assert all(e["status"] == "ok" for r in runs for e in r["evaluations"])
    (name, measured), *_ = data["per_eval"]["problems"].items()
    assert measured["statuses"] == ["ok"] and data["per_eval"]["model"][0]["problem"] == name
    builds = data["builds"]
    assert len(builds["evaluations"]) >= 4 and len({e["candidate"] for e in builds["evaluations"]}) >= 3
    assert builds["gpu_waited_on_compiler"] is False and builds["builds"] == []  # the cpu target prebuilds nothing
    table = (tmp_path / "scale_device.md").read_text()
    assert table in capsys.readouterr().out
    assert "## Busy share" in table and "## Compiles beside the GPU" in table and "| 4 | 1 |" in table


def test_scale_device_on_a_machine_without_the_gpu_says_so_in_one_line(tmp_path, capsys):
    scale_device = load("scale_device")
    if scale_device.get_platform("cuda").present():
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(SystemExit):
        scale_device.main(["--out", str(tmp_path / "s.json")])
    assert "--target cuda: this machine has no such device; --target cpu runs" in capsys.readouterr().err


def evaluation(candidate: str, started: float, ended: float, queue_wait: float = 0.0, load: float = 0.1) -> dict:
    return {"kind": "evaluation", "candidate": candidate, "languages": "cuda", "status": "ok", "started": started,
            "ended": ended, "device_s": ended - started, "queue_wait": queue_wait, "compile_load": load,
            "first_calls": 0.0}  # fmt: skip


def test_compiler_waits_count_a_build_on_the_device_only_while_work_was_queued():
    records = load("scale_records")
    build = {"kind": "build", "candidate": "b", "languages": "cuda", "status": "ok", "started": 0.0, "ended": 30.0,
             "device_s": 30.0}  # fmt: skip
    # The extension built beside the GPU (which timed "t" meanwhile), then loaded from the cache: no wait.
    beside = [build, evaluation("t", 0.0, 10.0), evaluation("b", 31.0, 33.0, queue_wait=1.0)]
    waits = records.compiler_waits(beside)
    assert not waits["gpu_waited_on_compiler"] and waits["busy_s"] == pytest.approx(12.0)
    assert records.builds(beside)[0]["device_busy_meanwhile_s"] == pytest.approx(10.0)
    # The same build inside an evaluation while "t" waited in the queue for 8 s: the GPU waited on the compiler.
    inside = [evaluation("b", 0.0, 10.0, load=9.0), evaluation("t", 10.0, 12.0, queue_wait=8.0)]
    waits = records.compiler_waits(inside)
    assert waits["gpu_waited_on_compiler"] and [r["candidate"] for r in waits["slow_loads_while_queued"]] == ["b"]
    assert waits["compile_s_while_queued"] == pytest.approx(9.0)  # "t" had nothing queued behind it
    # ... but with nothing queued meanwhile, a long load costs no other evaluation its device.
    assert not records.compiler_waits([evaluation("b", 0.0, 10.0, load=9.0)])["gpu_waited_on_compiler"]


def test_busy_share_over_the_wall_and_from_the_first_evaluation():
    records = load("scale_records")
    log = [evaluation("a", 100.0, 102.0), evaluation("b", 103.0, 105.0)]
    share = records.busy(log, wall=8.0)
    assert share == {"share": 0.5, "share_from_first": 0.8, "busy_s": 4.0}
    assert records.busy([], 1.0)["share"] == 0.0
    rows = records.devices_model({"p": {"device_s": [4.0, 6.0, 5.0]}, "none": {"device_s": []}}, model_s=5.0)
    assert len(rows) == 2 * 3 and rows[0]["eval_s"] == 5.0 and rows[0]["devices"][0] == pytest.approx((12.0, 1.0))
    header = {"date": "d", "machine": "m", "versions": {}, "target": "cuda"}
    text = records.markdown(
        {**header, "rate": {"failed": "AssertionError: x"}, "per_eval": {"problems": {}, "model": rows}}
    )
    assert "## rate: failed: AssertionError: x" in text and "| p | 5.0 | 5 | 1 | 12.0 (100%) |" in text
