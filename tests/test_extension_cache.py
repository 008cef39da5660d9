"""Extension builds and the deadlines: the harness builds a candidate's extensions in a step of its own
(eval/builds/service.py), once per key, into a folder it renames into place only when complete, so a build killed by its
deadline leaves nothing a later build waits on or loads; builds run against their own deadline (--compile-timeout);
and a result that depends on the machine (timeout, crashed) is never reused as a verdict.

The C++ here is one function with no torch headers: it builds in about half a second. A slow build is simulated by
a compiler wrapper (CXX) that writes a partial object, then sleeps, then compiles."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kernelevolve.eval.builds import extension_cache
from kernelevolve.eval.builds.extension_cache import BUILT, key, request_of
from kernelevolve.eval.builds.service import STAGING, BuildService
from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.result import EvalResult, Status
from kernelevolve.search import session
from kernelevolve.search.session import Limits, RunSpec
from kernelevolve.store.store import NodeRecord, Store
from tests.conftest import FIXTURES
from tests.doubles import RuleEvaluator, kernel

NOOP_CPP = "int kernelevolve_noop() { return 0; }\n"
MAIN_CPP = '#include <cstdio>\nint main() { std::puts("built"); return 0; }\n'

# A compiler that, when compiling, first leaves a partial object where the real one goes, then sleeps.
SLOW_CXX = """#!/bin/sh
out=""
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  prev="$a"
done
case " $* " in
  *" -c "*) [ -n "$out" ] && echo "partial object" > "$out"; sleep {sleep};;
esac
exec c++ "$@"
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(root))  # workers started from now on build here
    monkeypatch.delenv("CXX", raising=False)
    return root


def _candidate(folder: Path) -> Path:
    (folder / "noop.cpp").write_text(NOOP_CPP)
    cand = folder / "cand.py"
    cand.write_text(
        "import torch.nn as nn\nfrom torch.utils.cpp_extension import load\n\n"
        f"LIB = load(name='ke_noop', sources=[{str(folder / 'noop.cpp')!r}], is_python_module=False)\n\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x.clamp_min(0.0)\n"
    )
    return cand


def _slow_cxx(folder: Path, sleep: float, monkeypatch) -> None:
    wrapper = folder / "slow-c++"
    wrapper.write_text(SLOW_CXX.replace("{sleep}", f"{sleep:g}"))
    wrapper.chmod(0o755)
    monkeypatch.setenv("CXX", str(wrapper))


def _build_folders(cache: Path) -> list[Path]:
    """The complete builds (the service's locks and staging folders are hidden)."""
    return sorted(p for p in (cache / "extensions").iterdir() if p.is_dir() and not p.name.startswith("."))


def _main_request(folder: Path) -> dict:
    cpp = folder / "main.cpp"
    cpp.write_text(MAIN_CPP)
    return request_of(
        "load", {"name": "ke_main", "sources": [str(cpp)], "is_python_module": False, "is_standalone": True}
    )


# ---- the build service ----


def test_the_service_builds_a_request_once_into_the_folder_of_its_key(tmp_path):
    """A complete build is renamed into place under its key, with the marker that says so; asked again (two at once
    too), the service answers with that folder and builds nothing."""
    service = BuildService(root=tmp_path / "extensions", timeout_s=60)
    request = _main_request(tmp_path)
    replies: list[dict] = []
    threads = [threading.Thread(target=lambda: replies.append(service.build(request))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r["ok"] for r in replies] == [True, True], replies
    folder = tmp_path / "extensions" / key(request)
    assert {r["folder"] for r in replies} == {str(folder)} and (folder / BUILT).is_file()
    made = (folder / BUILT).stat().st_mtime_ns
    assert service.build(request) == {"ok": True, "folder": str(folder)}
    assert (folder / BUILT).stat().st_mtime_ns == made
    exe = extension_cache.load_built(request, folder)
    assert subprocess.run([exe], capture_output=True, text=True, timeout=10).stdout == "built\n"
    assert not list((tmp_path / "extensions" / STAGING).iterdir())


def test_a_failed_build_says_what_the_compiler_said_and_leaves_nothing(tmp_path):
    service = BuildService(root=tmp_path / "extensions", timeout_s=60)
    cpp = tmp_path / "broken.cpp"
    cpp.write_text("int main() { return undeclared_name; }\n")
    request = request_of(
        "load", {"name": "ke_broken", "sources": [str(cpp)], "is_python_module": False, "is_standalone": True}
    )
    reply = service.build(request)
    assert not reply["ok"] and "undeclared_name" in reply["log"], reply
    assert _build_folders(tmp_path) == [] and not list((tmp_path / "extensions" / STAGING).iterdir())
    assert service.build({"kind": "load"}) == {"ok": False, "log": "malformed build request: 'kwargs'"}


def test_a_build_past_its_deadline_is_killed_and_leaves_nothing(tmp_path, monkeypatch):
    _slow_cxx(tmp_path, 60, monkeypatch)
    service = BuildService(root=tmp_path / "extensions", timeout_s=2)
    t0 = time.monotonic()
    reply = service.build(_main_request(tmp_path))
    assert time.monotonic() - t0 < 20
    assert not reply["ok"] and "the build of ke_main ran past 2 s" in reply["log"]
    assert _build_folders(tmp_path) == [] and not list((tmp_path / "extensions" / STAGING).iterdir())


def test_without_a_build_service_the_wrapped_load_builds_privately(tmp_path):
    """A script that installs the wrapper itself has no service: the build goes to a private folder, never into the
    cache, and the stage report hears of its start and end."""
    root = tmp_path / "extensions"
    cpp = tmp_path / "main.cpp"
    cpp.write_text(MAIN_CPP)
    script = "\n".join(
        [
            "from pathlib import Path",
            "from torch.utils import cpp_extension",
            "from kernelevolve.eval.builds import extension_cache",
            "seen = []",
            f"extension_cache.install(root=Path({str(root)!r}), report=seen.append)",
            "extension_cache.install()  # installing again wraps nothing twice",
            f"exe = cpp_extension.load('ke_main', sources=[{str(cpp)!r}], is_python_module=False, is_standalone=True)",
            "print(exe)",
            "print(seen)",
        ]
    )
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    exe, seen = p.stdout.strip().splitlines()[-2:]
    assert seen == "['ke_main', None]" and not root.exists()
    assert subprocess.run([exe], capture_output=True, text=True, timeout=10).stdout == "built\n"
    assert extension_cache.is_build_stage(extension_cache.build_stage("ke_main"))
    assert not extension_cache.is_build_stage("compile")


# ---- the compile deadline ----


def test_a_build_killed_at_its_deadline_says_so_and_poisons_nothing(tmp_path, cache, monkeypatch, relu_problem):
    """`eval --compile-timeout` kills a build at the compile deadline; the reason names it and the way out. The dead
    build left no folder under its key, so the next evaluation of the same source builds afresh, without waiting."""
    cand = _candidate(tmp_path)
    _slow_cxx(tmp_path, 60, monkeypatch)
    args = [str(relu_problem.path), str(cand), "--target", "cpu", "--json", "--trials", "1", "--compile-timeout", "2"]
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "kernelevolve", "eval", *args], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 1, p.stderr
    killed = json.loads(p.stdout)
    assert killed["status"] == "timeout", killed
    assert "during extension build ke_noop: compiling ran past 2 s" in killed["reason"]
    assert "raise --compile-timeout" in killed["reason"]
    assert time.monotonic() - t0 < 60  # the killed worker's build step died with it: eval did not wait for it
    assert _build_folders(cache) == []

    monkeypatch.delenv("CXX")
    with Evaluator("cpu", timeout_s=60) as ev:
        t0 = time.monotonic()
        again = ev.evaluate(relu_problem, cand, timed=False, trials=1)
        elapsed = time.monotonic() - t0 - again.stages.get("worker_start", 0.0)
    assert again.status is Status.OK, (again.reason, again.log_tail)
    assert elapsed < 30
    (folder,) = _build_folders(cache)
    assert (folder / BUILT).is_file() and not list((cache / "extensions" / STAGING).iterdir())


def test_a_build_slower_than_the_candidate_deadline_is_not_cut(tmp_path, cache, monkeypatch, relu_problem):
    """A build that a busy machine makes slow runs against --compile-timeout, not against --timeout."""
    cand = _candidate(tmp_path)
    _slow_cxx(tmp_path, 6, monkeypatch)
    with Evaluator("cpu", timeout_s=4, compile_timeout_s=60) as ev:
        result = ev.evaluate(relu_problem, cand, timed=False, trials=1)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.stages["compile"] >= 6


def test_a_prebuild_builds_into_the_cache_and_the_evaluation_loads_that_build(tmp_path, cache, relu_problem):
    """Evaluator.prebuild (the driver's build beside a running evaluation) imports the candidate in a worker of its
    own and judges nothing; the candidate's evaluation then loads the built library instead of building again."""
    cand = _candidate(tmp_path)
    with Evaluator("cpu", timeout_s=60) as ev:
        built = ev.prebuild(relu_problem, cand)
        assert built.status is Status.OK and built.reason == "built only: not evaluated", built.log_tail
        (folder,) = _build_folders(cache)
        (library,) = folder.glob("*.so")
        made = library.stat().st_mtime_ns
        result = ev.evaluate(relu_problem, cand, timed=False, trials=1)
        assert result.status is Status.OK, (result.reason, result.log_tail)
        assert library.stat().st_mtime_ns == made and _build_folders(cache) == [folder]  # loaded, not rebuilt
        broken = tmp_path / "broken.py"
        broken.write_text("raise RuntimeError('no such extension')\n")
        failed = ev.prebuild(relu_problem, broken)
    assert failed.status is Status.COMPILE_ERROR and "no such extension" in failed.reason


# ---- machine-dependent results are not verdicts ----


def _result(status: Status) -> EvalResult:
    ok = status is Status.OK
    return EvalResult(status=status, correct=ok, speedup=1.0 if ok else None, fitness=1.0 if ok else 0.0)


def test_a_timeout_crash_or_harness_limit_is_never_reused(tmp_path):
    store = Store(tmp_path)

    def run(name: str):
        return store.create_run(
            problem_path="p.py", problem_hash="ph", platform="cpu", config={}, config_hash=name, budget=5
        )

    first = run("a")
    store.add_node(first.id, NodeRecord("seed", "x = 1\n", "h1", {}, [], _result(Status.TIMEOUT)), strategy_state={})
    store.add_node(first.id, NodeRecord("tune", "x = 2\n", "h2", {}, [], _result(Status.CRASHED)), strategy_state={})
    store.add_node(first.id, NodeRecord("tune", "x = 3\n", "h3", {}, [], _result(Status.INCORRECT)), strategy_state={})
    store.add_node(
        first.id, NodeRecord("tune", "x = 4\n", "h4", {}, [], _result(Status.HARNESS_LIMIT)), strategy_state={}
    )
    assert store.find_evaluated("ph", "cpu", "h1") is None
    assert store.find_evaluated("ph", "cpu", "h2") is None
    assert store.find_evaluated("ph", "cpu", "h4") is None  # the harness ran out of memory: no verdict
    found = store.find_evaluated("ph", "cpu", "h3")  # a verdict on the kernel itself is reused
    assert found and found[1].status is Status.INCORRECT
    second = run("b")  # evaluated again, this time to the end: that result is the one reused from now on
    again = store.add_node(
        second.id, NodeRecord("seed", "x = 1\n", "h1", {}, [], _result(Status.OK)), strategy_state={}
    )
    found = store.find_evaluated("ph", "cpu", "h1")
    assert found and found[0].id == again.id and found[1].status is Status.OK


def test_a_seed_that_timed_out_is_evaluated_again_by_a_new_run_and_on_resume(tmp_path):
    """The first run's seed timed out: the driver says the way out; the next run evaluates the seed again instead of
    reusing the timeout, and so does the same run resumed (as with a larger --timeout)."""
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1, "SLOW = 1"))
    store = Store(tmp_path / "runs")
    problem = FIXTURES / "transpose.py"

    def search(spec: RunSpec, evaluator: RuleEvaluator) -> str:
        opened = session.open_run(store, spec, Limits(budget=3))
        reason = session.build_driver(opened, [evaluator], warm_start=False).run_search()
        session.finish(opened, reason, evaluator)
        return reason

    slow = RuleEvaluator(statuses={"SLOW": Status.TIMEOUT})
    reason = search(RunSpec(problem, seed), slow)
    assert reason == "the seed kernel timed out (past the evaluation deadline); raise --timeout or fix it"
    fast = RuleEvaluator()
    assert search(RunSpec(problem, seed, rng_seed=1), fast) == "budget of 3 nodes reached"
    assert fast.evaluated[0] == seed.read_text()  # the seed itself, not its stored timeout
    again = RuleEvaluator()
    assert search(RunSpec(problem, seed), again) == "budget of 3 nodes reached"  # the first run, resumed
    assert seed.read_text() not in again.evaluated  # the second run's evaluation of it is reused, not the timeout
    (first, *_), *_ = store.runs()
    seed_node = store.nodes(first.id)[0]
    assert seed_node.status == "ok" and store.evaluation(seed_node.id).status is Status.OK


def test_a_long_build_log_keeps_its_head_and_its_end():
    from kernelevolve.eval.builds import service as builds

    log = "first error: here\n" + "x" * 50_000 + "\nlast line"
    short = builds._shortened(log)
    assert short.startswith("first error: here") and short.endswith("last line")
    assert len(short) < builds.LOG_HEAD + builds.LOG_TAIL + 100 and "characters of the build log left out" in short
    assert builds._shortened("short log") == "short log"


def test_a_held_build_lock_is_waited_for_only_while_the_requester_lives(tmp_path):
    """The lock files are readable in the sandbox, and flock needs no more: a candidate holding one must not stall
    other workers' builds for ever."""
    import fcntl
    import os

    from kernelevolve.eval.builds import service as builds

    service = BuildService(root=tmp_path / "extensions", timeout_s=60)
    request = _main_request(tmp_path)
    (tmp_path / "extensions" / builds.LOCKS).mkdir(parents=True)
    held = os.open(tmp_path / "extensions" / builds.LOCKS / f"{key(request)}.lock", os.O_RDONLY | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        t0 = time.monotonic()
        with pytest.raises(OSError, match="stayed held"):
            service.build(request, alive=lambda: time.monotonic() - t0 < 0.5)
        assert time.monotonic() - t0 < 5
    finally:
        os.close(held)


def test_a_build_that_leaves_a_link_is_refused_and_the_headers_beside_a_source_travel(tmp_path):
    from kernelevolve.eval.builds import service as builds

    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "ok.o").write_text("")
    assert builds._not_plain(tmp_path / "tree") == ""
    (tmp_path / "tree" / BUILT).symlink_to(tmp_path / "elsewhere")
    assert builds._not_plain(tmp_path / "tree") == BUILT
    (tmp_path / "common.cuh").write_text("#define ONE 1\n")
    (tmp_path / "k.cu").write_text('#include "common.cuh"\n')
    request = request_of("load", {"name": "k", "sources": str(tmp_path / "k.cu")})
    assert request["kwargs"]["sources"] == ["0-k.cu"]
    assert request["files"] == {"0-k.cu": '#include "common.cuh"\n', "common.cuh": "#define ONE 1\n"}


@pytest.mark.parametrize("use_pch", [None, False, True])
def test_torch_s_precompiled_header_never_fails_a_build(tmp_path, monkeypatch, use_pch):
    """torch keeps its precompiled header in its own folder, read-only to the build step: load_inline deletes one it
    finds there unless use_pch, and writes one with it, so a header left by an earlier use_pch failed every build
    (a read-only file system). The build step does neither: the binary is the same."""
    from torch.utils import cpp_extension

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system", "torch/include/torch/extension.h.gch")

    monkeypatch.setattr(cpp_extension, "remove_extension_h_precompiler_headers", read_only)
    monkeypatch.setattr(cpp_extension, "_check_and_build_extension_h_precompiler_headers", read_only)
    name = f"ke_pch_{str(use_pch).lower()}"  # torch versions a name built twice in one process
    arguments = {"name": name, "cpp_sources": NOOP_CPP, "no_implicit_headers": True, "is_python_module": False}
    if use_pch is not None:
        arguments["use_pch"] = use_pch
    folder = tmp_path / "build"
    folder.mkdir()
    extension_cache.build_into(request_of("load_inline", arguments), folder)
    assert (folder / f"{name}.so").is_file()
    assert cpp_extension.remove_extension_h_precompiler_headers is read_only  # torch's own restored after the build


# ---- torch's header, precompiled per flag set ----

SEED_FLAGS = ["-O3", "-march=native", "-fopenmp"]  # the flags of the shipped C++ seeds and examples


def _cpp_request(name: str, source: str = "int f() { return 1; }\n", **more) -> dict:
    return request_of("load_inline", {"name": name, "cpp_sources": source, "extra_cflags": SEED_FLAGS, **more})


def test_a_c_plus_plus_load_inline_has_one_header_per_flag_set():
    """Sources and names do not change torch's compile flags, so they share one header; flags do. CUDA, `load`'s
    own files and sources without torch's header get none."""
    header = extension_cache.header_request
    a, b = header(_cpp_request("a")), header(_cpp_request("b", "int g() { return 2; }\n", functions=["g"]))
    assert a is not None and key(a) == key(b)
    assert key(header(_cpp_request("a", extra_include_paths=["/x"]))) != key(a)
    assert key(header(_cpp_request("a", is_python_module=False))) == key(a)  # the source differs, not the flags
    fast_math = request_of(
        "load_inline", {"name": "a", "cpp_sources": "", "extra_cflags": [*SEED_FLAGS, "-ffast-math"]}
    )
    assert key(header(fast_math)) != key(a)
    assert header(_cpp_request("a", cuda_sources="__global__ void k() {}")) is None
    assert header(_cpp_request("a", no_implicit_headers=True)) is None
    assert header(request_of("load", {"name": "a", "sources": []})) is None


def test_the_build_step_looks_for_torch_s_header_in_the_header_folder_first(tmp_path):
    """The folder the service names comes before torch's own on the include path (where the compiler finds the
    precompiled form, or its text): a header there that stops the compiler stops this build."""
    header = tmp_path / "header"
    (header / "torch").mkdir(parents=True)
    (header / "torch" / "extension.h").write_text("#error the header folder came first\n")
    folder = tmp_path / "build"
    folder.mkdir()
    request = _cpp_request("ke_header_first")
    with pytest.raises(RuntimeError, match="the header folder came first"):
        extension_cache.build_into({**request, extension_cache.PRECOMPILED: str(header)}, folder)


def test_the_header_a_request_names_is_the_service_s_own(tmp_path, monkeypatch):
    """A candidate's process writes the request: a header folder it names is dropped, and the service's own (none
    here) is what the build step gets."""
    seen: list[dict] = []
    monkeypatch.setattr(BuildService, "header", lambda self, request, alive=None: None)
    monkeypatch.setattr(
        BuildService, "_step", lambda self, args, request, *rest: (seen.append(request), ("", 1, "no"))[1]
    )
    service = BuildService(root=tmp_path / "extensions", timeout_s=60)
    request = _cpp_request("ke_named")
    reply = service.build({**request, extension_cache.PRECOMPILED: "/a/folder/of/the/candidate"})
    assert reply == {"ok": False, "log": "no"} and seen == [request]


def _fake_header_step(made: list[dict], code: int = 0):
    """The header step, standing in: a precompiled header that is an empty file (code 0), or a failure."""

    def step(self, args, request, name, alive, timeout_s):
        made.append(request)
        if args[0] == "--header" and code == 0:
            target = Path(args[-1], "torch", "extension.h.gch")
            target.parent.mkdir()
            target.write_bytes(b"")
        return "", code, "the compiler said no" if code else ""

    return step


def test_a_header_is_made_at_a_flag_set_s_second_build_and_the_last_used_are_kept(tmp_path, monkeypatch):
    """Making one costs more than one build saves: the first build of a flag set goes without, the second makes it,
    later ones use it; HEADERS_KEPT are kept, and a flag set whose header could not be made is not tried again."""
    from kernelevolve.eval.builds import service as builds

    made: list[dict] = []
    monkeypatch.setattr(BuildService, "_step", _fake_header_step(made))
    service = BuildService(root=tmp_path / "extensions", timeout_s=60)
    flag_sets = [[f"-DFLAGS={i}"] for i in range(builds.HEADERS_KEPT + 1)]
    folders = []
    for flags in flag_sets:
        request = request_of("load_inline", {"name": "k", "cpp_sources": "", "extra_cflags": flags})
        before = len(made)
        assert service.header(request) is None and len(made) == before  # the flag set's first build: none made
        folder = service.header(request)
        assert folder is not None and (folder / "torch" / "extension.h.gch").is_file()
        folders.append(folder)
        time.sleep(0.01)  # the marks of last use differ
    assert len(made) == len(flag_sets) and not folders[0].exists()  # the one used longest ago was removed
    assert all(f.exists() for f in folders[1:])
    again = request_of("load_inline", {"name": "k2", "cpp_sources": "x", "extra_cflags": flag_sets[-1]})
    assert service.header(again) == folders[-1] and len(made) == len(flag_sets)  # made once

    monkeypatch.setattr(BuildService, "_step", _fake_header_step(made, code=1))
    refused = request_of("load_inline", {"name": "k", "cpp_sources": "", "extra_cflags": ["-std=c++98"]})
    assert [service.header(refused) for _ in range(3)] == [None, None, None]
    assert len(made) == len(flag_sets) + 1  # tried once: the flag set keeps an empty folder that says why
    (empty,) = [p for p in (tmp_path / "extensions" / ".headers").iterdir() if (p / "not-made.txt").is_file()]
    assert "the compiler said no" in (empty / "not-made.txt").read_text()


def test_a_header_being_made_by_another_is_not_waited_for(tmp_path, monkeypatch):
    """Making one takes longer than a build without it: a build that finds it under way goes on without."""
    import fcntl
    import os

    made: list[dict] = []
    monkeypatch.setattr(BuildService, "_step", _fake_header_step(made))
    service = BuildService(root=tmp_path / "extensions", timeout_s=60)
    request = _cpp_request("k")
    assert service.header(request) is None  # the flag set's first build
    lock = tmp_path / "extensions" / ".locks" / f"header-{key(extension_cache.header_request(request))}.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        t0 = time.monotonic()
        assert service.header(request) is None and time.monotonic() - t0 < 1 and made == []
    finally:
        os.close(fd)
    assert service.header(request) is not None and len(made) == 1


def test_torch_s_header_precompiled_for_the_seeds_flags_is_taken_by_the_compiler():
    """For real, in the extension cache the seeds' and examples' builds use (made here if no build made it yet):
    the build step keeps a precompiled header only where the compiler, given torch's compile flags for these, takes
    it in place of parsing torch's header."""
    service, request = BuildService(timeout_s=600), _cpp_request("ke_seed_flags", extra_ldflags=["-fopenmp"])
    not_made = extension_cache.extensions_root() / ".headers" / key(extension_cache.header_request(request))
    deadline = time.monotonic() + 600
    # Made at a flag set's second build, here or by a seed's build in the other test process (not waited for
    # there, so waited for here).
    while (folder := service.header(request)) is None and time.monotonic() < deadline:
        if (not_made / "not-made.txt").is_file():
            pytest.fail(f"no precompiled header: {(not_made / 'not-made.txt').read_text()}")
        time.sleep(0.5)
    assert folder is not None and (folder / "torch" / "extension.h.gch").stat().st_size > 0


def test_build_flags_that_run_programs_or_write_files_are_refused_before_any_compiler_runs(tmp_path):
    """A flag such as `-wrapper` runs a program at build time; only flags that choose the code made pass
    (eval/builds/flags.py). The seeds' and examples' flags all pass."""
    from kernelevolve.eval.builds.flags import refused

    honest = {
        "extra_cflags": ["-O3", "-march=native", "-fopenmp", "-g", "-fsanitize=address", "-DNDEBUG", "-std=c++17"],
        "extra_cuda_cflags": ["-O3", "--use_fast_math", "-gencode", "arch=compute_90a,code=sm_90a", "-Xptxas", "-v",
                              "-lineinfo", "--expt-relaxed-constexpr", "-Xcompiler", "-fopenmp", "-maxrregcount=128"],
        "extra_ldflags": ["-fopenmp", "-lcuda", "-L/usr/lib", "-Wl,-rpath,/opt/lib"],
    }  # fmt: skip
    assert refused(honest) == []
    hostile = {
        "extra_cflags": ["-wrapper", "/bin/sh,-c,junk", "-fplugin=/tmp/p.so", "-B/tmp", "-save-temps", "-fuse-ld=x"],
        "extra_cuda_cflags": ["-Xcompiler", "-wrapper,/bin/sh", "-ccbin", "/tmp/cc"],
        "extra_ldflags": ["-Wl,-plugin,/tmp/p.so"],
    }
    assert len(refused(hostile)) == 10, refused(hostile)
    arguments = {"name": "wrapped", "cpp_sources": "int f() { return 1; }", "extra_cflags": ["-wrapper", "/bin/sh"]}
    request = request_of("load_inline", arguments)
    reply = BuildService(root=tmp_path / "extensions").build(request)
    assert not reply["ok"] and reply["log"].startswith("build flags not allowed here: extra_cflags: -wrapper")
    staging = tmp_path / "extensions" / ".staging"
    assert not staging.exists() or not any(staging.iterdir())  # refused before a staging folder was made
