"""The sandbox around candidate code (eval/launch/sandbox.py): no network, nothing it starts outlives its worker, the
parent out of sight, no secrets in its environment, nothing written outside its own folders. Each probe is a
candidate that prints what it could do (its print lands in the worker's log, which the result keeps); where this
machine cannot make namespaces the probes are skipped and the result's `sandbox` says why."""

from __future__ import annotations

import os
import socket
import tempfile
import time
from pathlib import Path

import pytest

from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.launch import cgroup, sandbox
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.conftest import CANDIDATES, FIXTURES

RELU = FIXTURES / "kb_relu.py"
PROBE = """
import json, os, socket, sys, time
import torch
import torch.nn as nn

REPORT = {report!r}  # in a folder left writable: the daemon's proof of life would land there
found = {{"ppid": os.getppid(), "secret": os.environ.get("KERNELEVOLVE_TEST_API_KEY"),
          "kept": os.environ.get("KERNELEVOLVE_TEST_PLAIN"),
          "others": sorted(k for k in ("AZURE_OPENAI_KEY", "PGPASSWORD", "HTTPS_PROXY") if k in os.environ)}}
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    found["network"] = "connected"
except OSError as e:
    found["network"] = type(e).__name__
for part in ("mem", "fd", "environ"):  # the judge: its memory holds the references, its descriptors the result pipe
    try:
        if part == "fd":  # a descriptor opened through its link (the events pipe is one of them)
            names = os.listdir(f"/proc/{{os.getppid()}}/fd")
            errors = []
            for name in names:
                try:
                    os.close(os.open(f"/proc/{{os.getppid()}}/fd/{{name}}", os.O_WRONLY | os.O_NONBLOCK))
                    raise SystemExit("opened the judge's descriptor " + name)
                except OSError as e:
                    errors.append(type(e).__name__)
            if "PermissionError" not in errors:
                raise OSError("no descriptor refused")
            raise PermissionError(", ".join(sorted(set(errors))))
        else:
            open(f"/proc/{{os.getppid()}}/{{part}}", "rb").read(1)
        found["parent_" + part] = "read"
    except OSError as e:
        found["parent_" + part] = type(e).__name__
if os.fork() == 0:  # a daemon of its own session, meant to outlive the worker
    os.setsid()
    if os.fork() == 0:
        time.sleep(4)
        with open(REPORT + ".daemon", "w") as f:
            f.write("still alive")
    os._exit(0)
print("PROBE " + json.dumps(found), flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.fixture
def listening():
    server = socket.create_server(("127.0.0.1", 0))
    yield server.getsockname()[1]
    server.close()


def test_every_result_says_what_confines_candidates(cpu_evaluator):
    result = cpu_evaluator.evaluate(load_problem(RELU), FIXTURES / "candidates" / "relu_ok.py", trials=1)
    assert result.sandbox == sandbox.describe(memory_limited=True) and result.sandbox


@pytest.mark.skipif(not sandbox.prefix(), reason=f"no sandbox on this machine: {sandbox.describe()}")
def test_a_candidate_has_no_network_no_parent_no_secrets_and_nothing_outlives_it(
    tmp_path, monkeypatch, listening, sandbox_writable
):
    import json

    monkeypatch.setenv("KERNELEVOLVE_TEST_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("KERNELEVOLVE_TEST_PLAIN", "kept")
    # credentials under names no pattern of credential names catches: the environment is an allowlist
    monkeypatch.setenv("AZURE_OPENAI_KEY", "azure-must-not-leak")
    monkeypatch.setenv("PGPASSWORD", "pg-must-not-leak")
    monkeypatch.setenv("HTTPS_PROXY", "http://user:proxy-password@proxy.invalid:3128")
    report = sandbox_writable / "report.json"
    candidate = tmp_path / "probe.py"
    candidate.write_text(PROBE.format(report=str(report), port=listening))
    with Evaluator("cpu", timeout_s=120) as ev:  # started after the variables were set
        result = ev.evaluate(load_problem(RELU), candidate, trials=1, timed=False)
    assert result.status is Status.OK, (result.reason, result.log_tail[-2000:])
    found = json.loads(result.log_tail.split("PROBE ", 1)[1].splitlines()[0])
    assert found["network"] != "connected"  # a server listening on this machine's loopback is out of reach
    # The candidate's process is the judge's child; the judge's parent is outside the PID namespace, and the judge's
    # own /proc entries are closed to the candidate (it is not dumpable).
    assert found["ppid"] == 1
    assert {found[f"parent_{p}"] for p in ("mem", "fd", "environ")} == {"PermissionError"}, str(found)
    assert found["secret"] is None and found["kept"] == "kept" and found["others"] == []
    time.sleep(5)
    assert not Path(str(report) + ".daemon").exists()  # killed with the worker


WRITER = """
import json, os, tempfile
import torch
import torch.nn as nn

found = {{}}
for name, path in {targets!r}.items():
    try:
        with open(path, "a") as f:
            f.write("forged")
        found[name] = "written"
    except OSError as e:
        found[name] = e.strerror
own = os.path.join(tempfile.gettempdir(), "scratch")
with open(own, "w") as f:
    f.write("mine")
found["tmpdir"] = tempfile.gettempdir()
print("PROBE " + json.dumps(found), flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.mark.skipif(not sandbox.confines_files(), reason=f"no file-system confinement here: {sandbox.describe()}")
def test_a_candidate_writes_nothing_outside_its_own_folders(tmp_path):
    """The store, its own run folder and the problem file are read-only to it (a forged fitness, a deleted row, a
    slower reference); its TMPDIR is its own and is gone after the evaluation."""
    import json
    import shutil

    problem = tmp_path / "problem.py"
    shutil.copy(RELU, problem)
    store = tmp_path / "runs" / "kernelevolve.db"
    node = tmp_path / "runs" / "run-1" / "nodes" / "00001"
    node.mkdir(parents=True)
    store.write_text("the store")
    candidate = node / "kernel.py"
    targets = {"store": str(store), "problem": str(problem), "own_file": str(candidate), "new": str(node / "x.py")}
    candidate.write_text(WRITER.format(targets=targets))
    with Evaluator("cpu", timeout_s=120) as ev:
        result = ev.evaluate(load_problem(problem), candidate, trials=1, timed=False)
    assert result.status is Status.OK, (result.reason, result.log_tail[-2000:])
    found = json.loads(result.log_tail.split("PROBE ", 1)[1].splitlines()[0])
    assert {found[k] for k in targets} == {"Read-only file system"}, found
    assert store.read_text() == "the store" and problem.read_text() == RELU.read_text()
    assert not (node / "x.py").exists()
    assert found["tmpdir"] != tempfile.gettempdir() and not os.path.exists(found["tmpdir"])  # its own, removed
    assert "read-only file system" in result.sandbox


def test_eval_says_when_nothing_confines_candidates():
    import subprocess
    import sys

    env = {**os.environ, "KERNELEVOLVE_SANDBOX": "off"}
    args = [str(RELU), str(FIXTURES / "candidates" / "relu_ok.py"), "--target", "cpu", "--trials", "1"]
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "eval", *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr
    assert "sandbox: none: KERNELEVOLVE_SANDBOX=off" in p.stdout


FORKS_AND_ALLOCATES = """
import os, signal, time
import torch
import torch.nn as nn

children = []
for _ in range(5):  # each under the per-process cap; together over the limit
    pid = os.fork()
    if pid == 0:
        block = bytearray(300 * 2**20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(3)
        os._exit(0)
    children.append(pid)
statuses = [os.waitpid(pid, 0)[1] for pid in children]
killed = sum(os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGKILL for s in statuses)
print(f"PROBE killed={killed}", flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.mark.skipif(
    not (sandbox.confines_files() and cgroup.available()), reason=f"no memory cgroup here: {cgroup.describe()}"
)
def test_the_memory_limit_holds_over_the_candidates_whole_process_tree(tmp_path):
    """Five forked children of 300 MB each under a 1.5 GiB limit: each is under the per-process cap, together they
    are not, so the kernel kills within the worker's cgroup (a child, or the worker, then said in the reason)."""
    candidate = tmp_path / "forks.py"
    candidate.write_text(FORKS_AND_ALLOCATES)
    limit = 3 * 2**29
    root = cgroup._root()[0]
    before = set(root.glob(f"kernelevolve-{os.getpid()}-*"))  # a shared evaluator's spare worker has one
    with Evaluator("cpu", timeout_s=120, memory_limit=limit) as ev:
        result = ev.evaluate(load_problem(RELU), candidate, trials=1, timed=False)
    if result.status is Status.CRASHED:
        assert "out of memory: the candidate's processes together exceeded the 1.5 GiB" in result.reason
    else:
        assert "PROBE killed=" in result.log_tail, (result.status, result.reason, result.log_tail[-2000:])
        killed = int(result.log_tail.split("PROBE killed=", 1)[1].split()[0])
        assert killed >= 1, "five children held 1.5 GB together under a 1.5 GiB limit"
    assert "a memory cgroup over its process tree" in result.sandbox
    assert set(root.glob(f"kernelevolve-{os.getpid()}-*")) <= before, "a worker's cgroup was left behind"


def test_a_memory_limit_below_torchs_mapped_libraries_still_lets_the_worker_start():
    """The cpu target's per-process cap counts from the address space torch's import maps: torch maps more than
    600 MiB it never touches (a CUDA build of torch several GB), and a cap counted from zero killed every worker
    before it reported (a limit the device machine's memory-limit test set)."""
    with Evaluator("cpu", timeout_s=120, memory_limit=600 * 2**20) as ev:
        result = ev.evaluate(load_problem(RELU), CANDIDATES / "relu_ok.py", trials=1, timed=False)
    assert result.status is Status.OK, (result.status, result.reason, result.log_tail[-1500:])


POISONER = """
import json, os, shutil
import torch
import torch.nn as nn

found = {{}}
built = {built!r}
for name, path in (("replace", os.path.join(built, "ke_noop.so")), ("beside", os.path.join(built, "x.so"))):
    try:
        with open(path, "wb") as f:
            f.write(b"slow module")
        found[name] = "written"
    except OSError as e:
        found[name] = e.strerror
try:
    os.mkdir(os.path.join(os.path.dirname(built), "forged"))
    found["new_build"] = "made"
except OSError as e:
    found["new_build"] = e.strerror
print("PROBE " + json.dumps(found), flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.mark.skipif(not sandbox.confines_files(), reason=f"no file-system confinement here: {sandbox.describe()}")
def test_a_candidate_cannot_replace_a_build_that_other_candidates_load(tmp_path, monkeypatch):
    """The harness builds extensions in a step of its own (eval/builds/service.py); to candidates the cache is
    read-only, so
    one cannot swap a cached library for a slow one of the same name, nor plant a build under a key."""
    import json

    from tests.test_extension_cache import _build_folders, _candidate

    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "cache"))
    problem = load_problem(RELU)
    honest = _candidate(tmp_path)
    with Evaluator("cpu", timeout_s=120) as ev:
        first = ev.evaluate(problem, honest, trials=1, timed=False)
        assert first.status is Status.OK, (first.reason, first.log_tail[-2000:])
        (folder,) = _build_folders(tmp_path / "cache")
        (library,) = folder.glob("*.so")
        before = library.read_bytes()
        poisoner = tmp_path / "poisoner.py"
        poisoner.write_text(POISONER.format(built=str(folder)))
        result = ev.evaluate(problem, poisoner, trials=1, timed=False)
        assert result.status is Status.OK, (result.reason, result.log_tail[-2000:])
        again = ev.evaluate(problem, honest, trials=1, timed=False)
    found = json.loads(result.log_tail.split("PROBE ", 1)[1].splitlines()[0])
    assert set(found.values()) == {"Read-only file system"}, found
    assert library.read_bytes() == before and _build_folders(tmp_path / "cache") == [folder]
    assert again.status is Status.OK


CACHE_WRITER = """
import json, os, stat
import torch
import torch.nn as nn

found = {{}}
for name, folder in {folders!r}.items():
    path = os.path.join(folder, "forged-by-the-candidate")
    try:
        with open(path, "w") as f:
            f.write("forged")
        found[name] = open(path).read()
    except OSError as e:
        found[name] = e.strerror
print("PROBE " + json.dumps(found), flush=True)
for fd in map(int, os.listdir("/proc/self/fd")):  # "my trusted phase is over too": to every pipe it can write
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.write(fd, b'{{"event": "trusted_done"}}\\n')
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.mark.skipif(
    "private layers" not in sandbox.describe(), reason=f"no overlays over the caches here: {sandbox.describe()}"
)
def test_what_a_candidate_writes_into_the_shared_caches_stays_its_own(tmp_path, monkeypatch):
    """Triton's, inductor's and the peaks' caches are seen through private layers: the candidate reads back what it
    wrote there, and none of it reaches the caches other workers read (a slowed torch.compile baseline, a forged
    peak bandwidth under the roofline check), not even when it claims on the events pipe that its trusted phase
    ended. What the trusted phase wrote (here the problem file itself, run there; in a search the torch.compile
    baseline's kernels) is kept."""
    import json

    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    folders = dict(zip(("peaks", "inductor", "triton"), sandbox.shared_caches()))
    assert all(folder.startswith(str(tmp_path)) for folder in folders.values()), folders
    candidate = tmp_path / "writer.py"
    candidate.write_text(CACHE_WRITER.format(folders=folders))
    problem = tmp_path / "problem.py"
    trusted = Path(folders["triton"]) / "from-the-trusted-phase"
    problem.write_text(f"open({str(trusted)!r}, 'w').write('kept')\n" + RELU.read_text())
    with Evaluator("cpu", timeout_s=120) as ev:
        result = ev.evaluate(load_problem(problem), candidate, trials=1, timed=False)
    assert result.status is Status.OK, (result.reason, result.log_tail[-2000:])
    found = json.loads(result.log_tail.split("PROBE ", 1)[1].splitlines()[0])
    assert set(found.values()) == {"forged"}, found  # its own layer: written and read back
    assert not [f for f in folders.values() if (Path(f) / "forged-by-the-candidate").exists()]
    assert trusted.read_text() == "kept"


SYSV_SEGMENT = """
import ctypes, json
import torch
import torch.nn as nn

libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.restype = ctypes.c_int
seen = libc.shmget({key}, 0, 0)  # a segment an earlier evaluation left (or the host holds) under this key
made = libc.shmget({key}, 1 << 20, 0o1000 | 0o600)  # IPC_CREAT: left behind on purpose, never removed
print("PROBE " + json.dumps({{"seen": seen, "made": made}}), flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.mark.skipif(not sandbox.prefix(), reason=f"no sandbox on this machine: {sandbox.describe()}")
def test_system_v_shared_memory_goes_with_its_evaluation(tmp_path):
    """A System V segment a candidate makes and never removes outlives no worker, and no later evaluation (nor the
    host) sees it: the worker has an IPC namespace of its own."""
    import ctypes
    import json
    import random

    libc = ctypes.CDLL(None, use_errno=True)
    key = random.randrange(1 << 20, 1 << 30)
    candidate = tmp_path / "segment.py"
    candidate.write_text(SYSV_SEGMENT.format(key=key))
    found = []
    with Evaluator("cpu", timeout_s=120) as ev:
        for _ in range(2):
            result = ev.evaluate(load_problem(RELU), candidate, trials=1, timed=False)
            assert result.status is Status.OK, (result.reason, result.log_tail[-2000:])
            found.append(json.loads(result.log_tail.split("PROBE ", 1)[1].splitlines()[0]))
    assert found[0]["made"] >= 0 and found[1]["made"] >= 0  # each could make one
    assert found[1]["seen"] == -1  # the second evaluation does not see the first's
    assert libc.shmget(key, 0, 0) == -1  # nor does the host


LEAKS = """
import torch
import torch.nn as nn

print("AZURE_OPENAI_KEY=azure-secret-value-1234", flush=True)
print("proxy: http://alice:proxy-secret-pw@proxy.invalid:3128", flush=True)
print("key: sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123", flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        raise RuntimeError("token in the message: ghp_abcdefghijklmnopqrstuvwxyz0123456789")
"""


def test_credentials_a_candidate_prints_are_redacted_before_anything_keeps_them(tmp_path, cpu_evaluator):
    """Whatever the candidate could read it could print; its log and its error's message reach the store and the
    model's prompt only with credentials taken out."""
    candidate = tmp_path / "leaks.py"
    candidate.write_text(LEAKS)
    result = cpu_evaluator.evaluate(load_problem(RELU), candidate, trials=1, timed=False)
    assert result.status is Status.RUNTIME_ERROR, result.reason
    kept = result.log_tail + result.reason + "".join(result.review)
    for secret in ("azure-secret-value-1234", "proxy-secret-pw", "sk-ant-api03", "ghp_abcdefghij"):
        assert secret not in kept, secret
    assert "AZURE_OPENAI_KEY=[redacted]" in result.log_tail and "http://alice:[redacted]@proxy.invalid" in kept


DEVICES = """
import json, os, stat
import torch
import torch.nn as nn

found = {"uid": os.getuid(), "gid": os.getgid(), "dev": sorted(os.listdir("/dev")), "opened": []}
for root, _dirs, files in os.walk("/dev"):
    for name in files:
        path = os.path.join(root, name)
        try:
            if stat.S_ISBLK(os.stat(path).st_mode):
                os.close(os.open(path, os.O_RDWR))
                found["opened"].append(path)
        except OSError:
            pass
try:
    open("/dev/kernelevolve-made", "w").close()
    found["made"] = "made"
except OSError as e:
    found["made"] = type(e).__name__
with open("/dev/shm/mine", "w") as f:  # torch's shared memory and the judge's shared tensors live here
    f.write("x")
with open("/dev/null", "w") as f:
    f.write("x")
found["urandom"] = len(open("/dev/urandom", "rb").read(8))
print("PROBE " + json.dumps(found), flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.mark.skipif(not sandbox.confines_files(), reason=f"no file-system confinement here: {sandbox.describe()}")
def test_a_candidate_sees_no_device_but_the_minimal_set_and_is_not_root(tmp_path):
    """Class 1 of issue 45: with the host's /dev and uid 0, a candidate opened a block device and rewrote the store
    under the read-only mounts. It gets null, zero, full, random and urandom (no disk, loop or console device), a
    read-only /dev but a private /dev/shm, and where this machine makes user namespaces an unprivileged uid."""
    import json

    from kernelevolve.eval.launch import confine

    candidate = tmp_path / "devices.py"
    candidate.write_text(DEVICES)
    with Evaluator("cpu", timeout_s=120) as ev:
        result = ev.evaluate(load_problem(RELU), candidate, trials=1, timed=False)
    assert result.status is Status.OK, (result.reason, result.log_tail[-2000:])
    found = json.loads(result.log_tail.split("PROBE ", 1)[1].splitlines()[0])
    assert found["opened"] == [], found
    expected = {*confine.device_names(gpu=False), *confine.DEV_LINKS, "shm"}
    assert set(found["dev"]) == expected, found["dev"]
    assert found["made"] in ("OSError", "PermissionError"), found  # EROFS
    assert found["urandom"] == 8
    assert "minimal /dev" in result.sandbox
    if sandbox._user()[0]:
        assert (found["uid"], found["gid"]) == (confine.CANDIDATE_ID, confine.CANDIDATE_ID), found
        assert f"uid {confine.CANDIDATE_ID}" in result.sandbox


def test_a_gpu_workers_minimal_dev_holds_the_gpus_nodes_and_makes_the_one_cuda_makes_lazily(monkeypatch):
    """On cuda/rocm the GPU's nodes join the minimal set (never a disk); /dev/nvidia-uvm, which CUDA would have
    nvidia-modprobe make in the read-only /dev, is made before (run on the CPU with the host's /dev faked)."""
    from kernelevolve.eval.launch import confine

    host = ["null", "zero", "full", "random", "urandom", "sda", "loop0", "nvidia0", "nvidiactl", "nvidia-caps", "dri"]
    host += ["kfd", "kmsg"]
    monkeypatch.setattr(confine.os, "listdir", lambda path: host if path == "/dev" else [])
    monkeypatch.setattr(confine.os.path, "exists", lambda path: os.path.basename(path) in host)
    assert confine.device_names(gpu=False) == ["null", "zero", "full", "random", "urandom"]
    gpu = set(confine.device_names(gpu=True)) - set(confine.DEVICES)
    assert gpu == {"nvidia0", "nvidiactl", "nvidia-caps", "dri", "kfd"}
    ran = []
    monkeypatch.setattr(confine.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(confine.subprocess, "run", lambda cmd, **kw: ran.append(cmd))
    confine._make_uvm_node()
    assert ran == [["/usr/bin/nvidia-modprobe", "-u", "-c=0"]]
