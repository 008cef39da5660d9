"""Workers forked by the zygote (eval/launch/zygote.py, eval/zygote/forked.py) are confined as exec'd ones are: no
capabilities
and no_new_privs, a PID namespace of their own in which the zygote is out of sight, a network namespace each, no
descriptor beyond those the evaluator passes, the exec'd worker's environment. The zygote starts again after it
died, and where it cannot start workers start by exec, said on stderr. Each probe is a candidate that writes what
it finds into a folder the test may read."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelevolve.eval import wire
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.launch import sandbox, spawn, zygote
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.conftest import CANDIDATES, FIXTURES

RELU = FIXTURES / "kb_relu.py"
PROBE = """
import json, os, stat
import torch
import torch.nn as nn

def kind(fd):
    link = os.readlink(f"/proc/self/fd/{{fd}}")
    if link.endswith("(deleted)"):  # the worker's log, an unnamed temporary file
        return "deleted"
    return link.split(":")[0] if link.startswith(("pipe:", "socket:", "anon_inode:")) else link

fds = {{}}
for fd in sorted(map(int, os.listdir("/proc/self/fd"))):
    try:
        fds[fd] = kind(fd)
    except OSError:  # the listing's own
        pass
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
found = {{
    "status": {{k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")}},
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "me": os.getpid(),
    "judge": open("/proc/1/cmdline", "rb").read().decode(errors="replace").split("\\0"),
    "net": os.readlink("/proc/self/ns/net"),
    "fds": fds,
    "env": dict(os.environ),
    "environ_block": open("/proc/self/environ", "rb").read().decode(errors="replace").split("\\0"),
}}
try:
    os.kill({zygote_pid}, 0)
    found["zygote"] = "signalled"
except OSError as e:
    found["zygote"] = type(e).__name__
with open({report!r}, "w") as f:
    json.dump(found, f)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""

needs_namespaces = pytest.mark.skipif(not sandbox.prefix(), reason=f"no sandbox here: {sandbox.describe()}")


@pytest.fixture
def own_zygotes(monkeypatch):
    """A registry of zygotes of this test's own, ended after it (the other tests' zygote is left alone)."""
    monkeypatch.setattr(zygote, "_zygotes", {})
    monkeypatch.setattr(zygote, "_failed", set())
    yield zygote._zygotes
    zygote.close_all()


def _probe(tmp_path: Path, folder: Path, name: str, zygote_pid: int = 0, forked: bool = True, monkeypatch=None) -> dict:
    """Evaluate the probe in a worker forked by the zygote (or exec'd) and return what it found."""
    monkeypatch.setenv(zygote.OFF_ENV, "on" if forked else "off")
    report = folder / f"{name}.json"
    candidate = tmp_path / f"{name}.py"
    candidate.write_text(PROBE.format(report=str(report), zygote_pid=zygote_pid or 2**22 - 1))
    with Evaluator("cpu", timeout_s=120) as ev:
        result = ev.evaluate(load_problem(RELU), candidate, trials=1, timed=False)
    assert result.status is Status.OK, (result.reason, result.log_tail[-2000:])
    return json.loads(report.read_text())


def _the_zygote() -> zygote.Zygote:
    (only,) = [z for z in zygote._zygotes.values() if z.alive()]
    return only


@needs_namespaces
def test_a_forked_worker_is_confined_as_an_exec_d_one(tmp_path, monkeypatch, sandbox_writable, own_zygotes):
    forked = _probe(tmp_path, sandbox_writable, "forked", monkeypatch=monkeypatch)
    zygote_pid = _the_zygote().pid
    again = _probe(tmp_path, sandbox_writable, "again", zygote_pid=zygote_pid, monkeypatch=monkeypatch)
    execd = _probe(tmp_path, sandbox_writable, "execd", forked=False, monkeypatch=monkeypatch)
    assert "kernelevolve.eval.zygote.server" in forked["judge"] and "kernelevolve.eval.worker" in execd["judge"]
    for found in (forked, again, execd):
        caps = found["status"]
        assert {caps[k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")} == {"0000000000000000"}, caps
        assert caps["NoNewPrivs"] == "1"
        # Its PID namespace holds the judge (pid 1) and the candidate's process: nothing outside, the zygote neither.
        assert found["pids"] == sorted({1, found["me"]}), found["pids"]
    assert again["zygote"] == "ProcessLookupError"
    # The zygote itself has a network namespace of its own, without a network.
    assert os.readlink(f"/proc/{zygote_pid}/ns/net") != os.readlink("/proc/self/ns/net")
    # The descriptors the candidate's process holds: the same numbers, to the same kinds of files.
    assert forked["fds"] == execd["fds"]
    assert os.readlink("/proc/self/ns/net") not in {forked["net"], again["net"], execd["net"]}
    # The same environment but for its private temporary folder (and the switch this test turned).
    private = {"TMPDIR", "TMP", "TEMP", zygote.OFF_ENV}
    assert forked["env"].keys() == execd["env"].keys()
    assert {k: v for k, v in forked["env"].items() if k not in private} == {
        k: v for k, v in execd["env"].items() if k not in private
    }
    assert forked["env"]["TMPDIR"] != execd["env"]["TMPDIR"]
    # /proc/self/environ: the exec'd worker's start-time environment; nothing of the zygote's where it was forked.
    assert not "".join(forked["environ_block"]) and f"TMPDIR={execd['env']['TMPDIR']}" in execd["environ_block"]


TWIN = """
import json, os, socket, time
import torch
import torch.nn as nn

held = socket.socket(socket.AF_UNIX)
try:  # a name in the abstract namespace, which a shared network namespace would hold once
    held.bind("\\0kernelevolve-zygote-test")
    bound = "bound"
except OSError as e:
    bound = type(e).__name__
with open({report!r}, "w") as f:
    json.dump({{"net": os.readlink("/proc/self/ns/net"), "bound": bound}}, f)
deadline = time.monotonic() + 60
while not os.path.exists({other!r}) and time.monotonic() < deadline:  # both alive at once
    time.sleep(0.05)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@needs_namespaces
def test_two_forked_workers_do_not_share_a_network_namespace(tmp_path, monkeypatch, sandbox_writable, own_zygotes):
    """Two workers of one zygote alive at once (two evaluators in two threads): each binds the same abstract Unix
    socket name, which only two network namespaces allow."""
    import threading

    monkeypatch.delenv(zygote.OFF_ENV, raising=False)
    reports = [sandbox_writable / "a.json", sandbox_writable / "b.json"]
    results = {}

    def evaluate(i: int) -> None:
        candidate = tmp_path / f"twin{i}.py"
        candidate.write_text(TWIN.format(report=str(reports[i]), other=str(reports[1 - i])))
        with Evaluator("cpu", timeout_s=120) as ev:
            results[i] = ev.evaluate(load_problem(RELU), candidate, trials=1, timed=False)

    threads = [threading.Thread(target=evaluate, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert all(r.status is Status.OK for r in results.values()) and len(results) == 2, results
    a, b = (json.loads(r.read_text()) for r in reports)
    assert a["bound"] == b["bound"] == "bound", (a, b)
    assert a["net"] != b["net"]
    assert len(own_zygotes) == 1


@needs_namespaces
def test_the_zygote_starts_again_after_it_was_killed(tmp_path, monkeypatch, sandbox_writable, own_zygotes, capfd):
    _probe(tmp_path, sandbox_writable, "first", monkeypatch=monkeypatch)
    first = _the_zygote()
    os.kill(first.pid, signal.SIGKILL)
    first.proc.wait(timeout=30)
    found = _probe(tmp_path, sandbox_writable, "second", monkeypatch=monkeypatch)
    assert "kernelevolve.eval.zygote.server" in found["judge"]
    assert _the_zygote().pid != first.pid
    assert "the worker zygote ended" in capfd.readouterr().err


def test_workers_start_by_exec_where_the_zygote_cannot_start(monkeypatch, own_zygotes, capfd):
    monkeypatch.setattr(zygote, "SERVER", "kernelevolve.eval.no_such_zygote")
    monkeypatch.delenv(zygote.OFF_ENV, raising=False)
    with Evaluator("cpu", timeout_s=120) as ev:
        result = ev.evaluate(load_problem(RELU), CANDIDATES / "relu_ok.py", trials=1, timed=False)
        again = ev.evaluate(load_problem(RELU), CANDIDATES / "relu_ok.py", trials=1, timed=False)
    assert result.status is Status.OK and again.status is Status.OK, result.reason
    err = capfd.readouterr().err
    assert err.count("the worker zygote could not start") == 1, err  # said once, then exec without a word
    assert not own_zygotes


def test_exit_statuses_and_kills_come_through_the_zygote(tmp_path, monkeypatch, own_zygotes):
    """What the evaluator reads of a worker: its exit status (here a worker given no result descriptor fails) and,
    killed, SIGKILL; alike whether forked or exec'd."""
    codes = {}
    for mode in ("on", "off"):
        monkeypatch.setenv(zygote.OFF_ENV, mode)
        with open(tmp_path / f"log-{mode}", "wb") as log:
            failing = spawn.start_worker(sandbox.child_env({}), memory_limit=0, stdout=log.fileno(), pass_fds=())
            code = failing.wait(timeout=120)
            hanging = spawn.start_worker(
                {**sandbox.child_env({}), wire.RESULT_FD_ENV: "1"}, memory_limit=0, stdout=log.fileno(), pass_fds=()
            )
            assert hanging.poll() is None  # it waits for its job on stdin
            killed = spawn.kill_group(hanging)
            spawn.release(failing)
        codes[mode] = (type(failing).__name__, code, killed)
    assert codes["on"] == ("ZygoteProcess", 1, -signal.SIGKILL), (codes, (tmp_path / "log-on").read_text()[-2000:])
    assert codes["off"] == ("Popen", 1, -signal.SIGKILL), codes


def test_a_forked_worker_without_its_capabilities_dropped_never_runs_a_job(monkeypatch, own_zygotes, tmp_path):
    """The check after dropping the capabilities stops the worker before its job: a probe that says something is
    left (here made to) ends it, and the evaluator reads a worker that failed to start."""
    code = "from kernelevolve.eval.launch import confine; confine.not_dropped = lambda: ['CapEff 1']; "
    code += "import runpy; runpy.run_module('kernelevolve.eval.zygote.server', run_name='__main__')"
    sitecustom = tmp_path / "site"
    sitecustom.mkdir()
    (sitecustom / "kernelevolve_zygote_test.py").write_text(code)
    monkeypatch.setattr(zygote, "SERVER", "kernelevolve_zygote_test")
    monkeypatch.setenv("PYTHONPATH", f"{sitecustom}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.delenv(zygote.OFF_ENV, raising=False)
    if not sandbox.prefix():
        pytest.skip(f"no sandbox here: {sandbox.describe()}")
    with Evaluator("cpu", timeout_s=120) as ev:
        result = ev.evaluate(load_problem(RELU), CANDIDATES / "relu_ok.py", trials=1, timed=False)
    assert result.status is Status.CRASHED and "failed to start" in result.reason, result.reason
    assert "privileges left after dropping them: CapEff 1" in result.log_tail


def test_the_parent_side_of_the_zygote_imports_no_torch():
    code = "import sys, kernelevolve.eval.launch.zygote, kernelevolve.eval.zygote.forked; print('torch' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "False", p.stderr


def _kind(link: str) -> str:
    if link.endswith("(deleted)"):  # the worker's log, an unnamed temporary file
        return "deleted"
    return link.split(":")[0] if link.startswith(("pipe:", "socket:", "anon_inode:")) else link


@needs_namespaces
def test_a_forked_judge_holds_the_descriptors_an_exec_d_one_holds(monkeypatch, own_zygotes):
    """Read from outside, at `ready`: the worker (the judge) holds the descriptors the evaluator passed and its own
    (the pipe to the candidate's process), nothing of the zygote's."""
    from kernelevolve.eval.evaluator import WorkerProcess

    held = {}
    for mode in ("on", "off"):
        monkeypatch.setenv(zygote.OFF_ENV, mode)
        worker = WorkerProcess("cpu")
        try:
            event = worker.next_event(time.monotonic() + 120)
            assert event and event["event"] == "ready", worker.log_tail()
            (judge,) = Path(f"/proc/{worker.proc.pid}/task/{worker.proc.pid}/children").read_text().split()
            try:
                names = os.listdir(f"/proc/{judge}/fd")
                held[mode] = {int(n): _kind(os.readlink(f"/proc/{judge}/fd/{n}")) for n in names}
            except PermissionError:
                pytest.skip("the judge's descriptors are closed to this user (it is not dumpable)")
        finally:
            worker.kill()
            worker.close_events()
    # The same descriptors (the passed ones' numbers are whatever the evaluator's were: they differ by start)
    assert sorted(held["on"].values()) == sorted(held["off"].values()), held
    assert {fd: kind for fd, kind in held["on"].items() if fd <= 3} == {
        0: "pipe",
        1: "deleted",
        2: "deleted",
        3: "pipe",  # the events pipe, received over the socket the evaluator passed (eval/worker/main.py)
    }


PARENT = """
import os, signal, sys, time
from kernelevolve.eval.launch import zygote
from kernelevolve.eval.evaluator import WorkerProcess

worker = WorkerProcess("cpu")
assert worker.next_event(time.monotonic() + 120)["event"] == "ready"
(z,) = zygote._zygotes.values()
print(z.pid, worker.proc.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")  # a zombie nobody reaps in a container without an init is gone all the same


def test_the_zygote_and_its_workers_end_with_the_process_that_started_them():
    """Killed with -9, the evaluating process cannot end its zygote: its socket's close does, and the zygote kills
    the worker it started (whose own lifeline ends it too)."""
    env = {**os.environ, zygote.OFF_ENV: "on"}
    p = subprocess.run([sys.executable, "-c", PARENT], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == -signal.SIGKILL, p.stderr[-2000:]
    zygote_pid, worker_pid = (int(x) for x in p.stdout.split())
    deadline = time.monotonic() + 30
    while not (_gone(zygote_pid) and _gone(worker_pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(zygote_pid) and _gone(worker_pid)


def _children(pid: int) -> set[int]:
    return {int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def test_a_worker_whose_request_was_interrupted_is_killed_not_handed_on(monkeypatch, own_zygotes, tmp_path):
    """A caller interrupted (Ctrl-C) between its request and the zygote's answer leaves a worker nobody holds: the
    next request gets its own worker, never that one, and that one is killed."""
    monkeypatch.setenv(zygote.OFF_ENV, "on")
    env = {**sandbox.child_env({}), wire.RESULT_FD_ENV: "1"}  # it waits for a job on stdin
    with open(tmp_path / "log", "wb") as log:
        first = spawn.start_worker(env, memory_limit=0, stdout=log.fileno(), pass_fds=())
        z = _the_zygote()
        answer = z._reply

        def interrupted(request, deadline):
            monkeypatch.setattr(z, "_reply", answer)
            raise KeyboardInterrupt

        monkeypatch.setattr(z, "_reply", interrupted)
        with pytest.raises(KeyboardInterrupt):
            spawn.start_worker(env, memory_limit=0, stdout=log.fileno(), pass_fds=())
        second = spawn.start_worker(env, memory_limit=0, stdout=log.fileno(), pass_fds=())
        try:
            assert second.pid != first.pid
            deadline = time.monotonic() + 30
            while _children(z.pid) != {first.pid, second.pid} and time.monotonic() < deadline:
                second.poll()  # reads what the zygote sent: the orphan's exit among it
                time.sleep(0.05)
            assert _children(z.pid) == {first.pid, second.pid}
            assert first.poll() is None and second.poll() is None
        finally:
            for proc in (first, second):
                spawn.kill_group(proc)


@needs_namespaces
def test_where_the_file_system_cannot_be_confined_a_forked_worker_runs_in_the_namespaces(
    tmp_path, monkeypatch, own_zygotes
):
    """As the exec'd worker degrades (eval/launch/sandbox.py): the namespaces without confine; the forked worker still
    drops the capabilities it can (it shares the zygote's user namespace where it is not root)."""
    namespaces = sandbox._prefix()[0]
    monkeypatch.setattr(sandbox, "_prefix", lambda: (namespaces, False, "namespaces; the file system is writable"))
    found = {
        mode: _probe(tmp_path, tmp_path, f"degraded-{mode}", forked=mode == "on", monkeypatch=monkeypatch)
        for mode in ("on", "off")
    }
    for report in found.values():  # its own PID namespace; no private folder (nothing would confine it to one)
        assert report["pids"] == sorted({1, report["me"]})
        assert report["env"].get("TMPDIR") == os.environ.get("TMPDIR")
    assert found["on"]["status"]["CapEff"] == found["on"]["status"]["CapBnd"] == "0000000000000000"
    assert "kernelevolve.eval.zygote.server" in found["on"]["judge"]


def test_a_gpu_target_s_worker_starts_by_exec(monkeypatch):
    """The forked start has not run on a GPU: a worker with a device to initialise is exec'd."""
    monkeypatch.delenv(zygote.OFF_ENV, raising=False)
    env = sandbox.child_env({wire.DEVICE_ENV: "0"})
    read_fd, write_fd = os.pipe()
    try:
        proc = spawn.start_worker(env, memory_limit=0, stdout=write_fd, pass_fds=())
        try:
            assert isinstance(proc, subprocess.Popen)
        finally:
            spawn.kill_group(proc)
    finally:
        os.close(read_fd)
        os.close(write_fd)


@needs_namespaces
def test_every_thread_waiting_on_a_forked_worker_reads_its_exit(tmp_path, monkeypatch, own_zygotes):
    """The evaluation's thread reads a worker's end while a Ctrl-C's clean-up kills it and waits too: both read its
    exit status (one took it from the other, which then waited for ever, and a Ctrl-C'd search never ended)."""
    import threading

    monkeypatch.setenv(zygote.OFF_ENV, "on")
    with open(tmp_path / "log", "wb") as log:
        for _ in range(3):
            hanging = spawn.start_worker(
                {**sandbox.child_env({}), wire.RESULT_FD_ENV: "1"}, memory_limit=0, stdout=log.fileno(), pass_fds=()
            )
            assert isinstance(hanging, zygote.ZygoteProcess) and hanging.poll() is None
            codes: dict[str, int] = {}

            def wait(proc=hanging, codes=codes) -> None:  # as the evaluation's thread reads a worker's end
                codes["wait"] = proc.wait(timeout=30)

            def kill(proc=hanging, codes=codes) -> None:  # as Evaluator.close kills a busy worker
                codes["kill"] = spawn.kill_group(proc)

            waiting = threading.Thread(target=wait, daemon=True)
            killing = threading.Thread(target=kill, daemon=True)
            waiting.start()
            time.sleep(0.2)
            killing.start()
            waiting.join(20)
            killing.join(20)
            assert codes == {"wait": -signal.SIGKILL, "kill": -signal.SIGKILL}, codes
