"""Class 8 of issue 45, the rest (eval/builds/reaper.py, eval/builds/service.py): a child the compiler leaves
behind dies when the compiler exits (it held the build till its deadline), and a build leaves in the extension
cache only its declared outputs, bounded in size (120 MB of junk landed there for good)."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from kernelevolve.eval.builds import reaper, service
from kernelevolve.eval.builds.extension_cache import request_of
from kernelevolve.eval.builds.service import BuildService

needs_compiler = pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("ninja") is None, reason="no g++ or ninja here"
)
SOURCE = "int kernelevolve_answer() { return 42; }\n"  # no torch header: built in about a second


def test_a_child_left_holding_the_compilers_output_dies_when_it_exits():
    start = time.monotonic()
    code, said = reaper.run(["sh", "-c", "(sleep 30; echo late) & echo compiled"])
    assert code == 0 and said.strip() == b"compiled"
    assert time.monotonic() - start < 10


def _fake_compiler(folder: Path, extra: str) -> str:
    """A CXX that does what a flag's program could when it compiles or links: `extra`, then the real compiler
    (torch's own `CXX --version` check runs it plain)."""
    path = folder / "cxx.sh"
    path.write_text(f'#!/bin/sh\ncase " $* " in *" -o "*) {extra} ;; esac\nexec g++ "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _request(folder: Path, name: str) -> dict:
    source = folder / f"{name}.cpp"
    source.write_text(SOURCE)
    return request_of("load", {"name": name, "sources": [str(source)], "is_python_module": False})


@needs_compiler
def test_a_builds_lingering_child_and_its_junk_neither_hold_it_nor_stay_in_the_cache(tmp_path):
    junk = "head -c 3000000 /dev/zero > junk.bin; mkdir -p more; touch more/x"
    lingers = "(sleep 60; echo late) &"  # holds ninja's pipe for a minute
    cxx = _fake_compiler(tmp_path, f"{junk}; {lingers}")
    builds = BuildService(root=tmp_path / "extensions", timeout_s=45, env={"CXX": cxx})
    start = time.monotonic()
    reply = builds.build(_request(tmp_path, "junky"))
    assert reply["ok"], reply.get("log", "")[-2000:]
    assert time.monotonic() - start < 30
    left = sorted(os.listdir(reply["folder"]))
    assert left == sorted(["junky.so", service.BUILT]), left


def test_a_build_over_the_size_limit_is_refused_and_leaves_nothing(tmp_path):
    root = tmp_path / "extensions"
    staging = root / ".staging" / "large"
    (staging / "sub").mkdir(parents=True)
    (staging / "large.so").write_bytes(b"\0" * 3000)
    (staging / "sub" / "junk").write_bytes(b"\0" * 100)
    builds = BuildService(root=root, timeout_s=45)
    with pytest.raises(OSError, match="over the limit"):
        builds._publish(staging, root / "key", "large", service.declared_outputs({"name": "large"}), 1000)
    assert not (root / "key").exists() and not (staging / "sub").exists()
