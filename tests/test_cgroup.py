"""The memory cgroup's choice of hierarchy and the files it writes, on a stand-in for /sys/fs/cgroup: this
machine's controllers are bound to cgroup v1, so the v2 branch (most current distributions) cannot run for real
here. What the kernel enforces is tests/adversarial/test_sandbox.py's, on whichever version the machine has."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.eval.launch import cgroup


def _own_v2_path() -> str:
    """This process's cgroup in the unified hierarchy ('0::PATH'), which _root looks below."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:].lstrip("/")
    return ""


def _fake_v2(root: Path, delegated: str, monkeypatch) -> None:
    own = root / _own_v2_path()
    own.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (own / "cgroup.subtree_control").write_text(delegated)
    monkeypatch.setattr(cgroup, "CGROUP_FS", root)
    monkeypatch.setattr(cgroup, "_moves_into", _makes_a_cgroup)  # a stand-in moves no process
    cgroup._root.cache_clear()


def _makes_a_cgroup(folder: Path) -> str:
    (folder / "probe").mkdir()
    (folder / "probe").rmdir()
    return ""


@pytest.fixture(autouse=True)
def _fresh_root():
    cgroup._root.cache_clear()
    yield
    cgroup._root.cache_clear()  # the real hierarchy again for the tests after these


def test_v2_with_memory_delegated_limits_the_tree_and_reads_its_kills(tmp_path, monkeypatch):
    _fake_v2(tmp_path / "cg", "cpu memory pids\n", monkeypatch)
    folder, version = cgroup._root()
    assert version == "v2" and folder is not None and folder.is_relative_to(tmp_path / "cg")
    assert cgroup.available() and cgroup.describe() == "a memory cgroup over its process tree"

    cage = cgroup.MemoryCage(3 << 30)
    assert cage.version == "v2" and cage.folder.parent == folder
    assert (cage.folder / "memory.max").read_text() == str(3 << 30)
    assert not cage.oom_killed()  # no memory.events yet: nothing killed
    (cage.folder / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 1\noom_kill 0\n")
    assert not cage.oom_killed()  # hitting the limit is not a kill
    (cage.folder / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 2\noom_kill 1\n")
    assert cage.oom_killed()

    (cage.folder / "memory.events").unlink()
    (cage.folder / "memory.max").unlink()  # a real cgroupfs drops its files with the folder
    cage.remove()
    assert not cage.folder.exists()


def test_v2_turns_swap_off_where_the_kernel_accounts_it(tmp_path, monkeypatch):
    """With swap accounting, memory.swap.max exists in every new cgroup: the limit must not spill into swap."""
    _fake_v2(tmp_path / "cg", "memory\n", monkeypatch)
    real_mkdir = Path.mkdir

    def mkdir_like_cgroupfs(self, *args, **kwargs):
        real_mkdir(self, *args, **kwargs)
        if self.name.startswith("kernelevolve-") and "probe" not in self.name:
            (self / "memory.swap.max").write_text("max\n")

    monkeypatch.setattr(Path, "mkdir", mkdir_like_cgroupfs)
    cage = cgroup.MemoryCage(1 << 30)
    assert (cage.folder / "memory.swap.max").read_text() == "0"


def test_v2_without_memory_delegated_says_so(tmp_path, monkeypatch):
    _fake_v2(tmp_path / "cg", "cpu pids\n", monkeypatch)
    (tmp_path / "cg" / _own_v2_path() / "cgroup.controllers").write_text("cpu pids\n")  # not even to its cgroup
    assert cgroup._root() == (None, "cgroup v2 without the memory controller delegated to this process's children")
    assert not cgroup.available()
    assert cgroup.describe() == (
        "memory capped per process (cgroup v2 without the memory controller delegated to this process's children)"
    )
    with pytest.raises(OSError, match="no memory cgroup"):
        cgroup.MemoryCage(1 << 30)


def test_v2_with_memory_delegated_to_its_own_cgroup_moves_its_processes_to_a_leaf_and_enables_it(tmp_path, monkeypatch):
    """v2 enables a controller for a cgroup's children only while it holds no process (as on the H100 machine:
    memory in the own cgroup's controllers, none in its subtree_control, the shell's processes in it)."""
    root = tmp_path / "cg"
    _fake_v2(root, "\n", monkeypatch)
    own = root / "process_api" / "abc"
    own.mkdir(parents=True)
    (tmp_path / "self").write_text("0::/process_api/abc\n")
    monkeypatch.setattr(cgroup, "SELF_CGROUP", tmp_path / "self")
    (own / "cgroup.controllers").write_text("memory\n")
    (own / "cgroup.subtree_control").write_text("\n")  # every cgroup has one: empty, nothing enabled below
    moved: list[str] = []
    real_write = Path.write_text

    def like_cgroupfs(self, data, *args, **kwargs):
        if self.name == "cgroup.procs" and self.parent.name == cgroup.LEAF:  # the kernel moves it out of `own`
            moved.append(data)
            left = [p for p in (own / "cgroup.procs").read_text().split() if p != data]
            real_write(own / "cgroup.procs", "".join(f"{p}\n" for p in left))
        return real_write(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", like_cgroupfs)
    (own / "cgroup.procs").write_text("1234\n5678\n")
    folder, version = cgroup._root()
    assert (folder, version) == (own, "v2")
    assert moved == ["1234", "5678"] and (own / "cgroup.procs").read_text() == ""
    assert (own / "cgroup.subtree_control").read_text() == "+memory" and (own / cgroup.LEAF).is_dir()
    assert cgroup.MemoryCage(1 << 30).folder.parent == own


def test_v2_a_process_in_an_earlier_evaluators_leaf_makes_its_cgroups_beside_it(tmp_path, monkeypatch):
    """A later command of the shell an evaluator moved (as on the H100 machine, a second pytest) starts in the
    leaf: its cgroups go beside the leaf, where memory is enabled, instead of nesting a leaf in it."""
    root = tmp_path / "cg"
    _fake_v2(root, "\n", monkeypatch)
    own = root / "process_api" / "abc"
    leaf = own / cgroup.LEAF
    leaf.mkdir(parents=True)
    (tmp_path / "self").write_text(f"0::/process_api/abc/{cgroup.LEAF}\n")
    monkeypatch.setattr(cgroup, "SELF_CGROUP", tmp_path / "self")
    (own / "cgroup.controllers").write_text("memory\n")
    (own / "cgroup.subtree_control").write_text("memory\n")
    (leaf / "cgroup.controllers").write_text("memory\n")
    (leaf / "cgroup.subtree_control").write_text("\n")
    (leaf / "cgroup.procs").write_text("1234\n")
    assert cgroup._root() == (own, "v2")
    assert not (leaf / cgroup.LEAF).exists() and (leaf / "cgroup.procs").read_text() == "1234\n"
    assert cgroup.MemoryCage(1 << 30).folder.parent == own


def test_v2_in_the_root_cgroup_enables_memory_without_moving_a_process(tmp_path, monkeypatch):
    """The root cgroup may hold processes and enable controllers both: nothing there (the machine's own processes)
    is moved."""
    root = tmp_path / "cg"
    _fake_v2(root, "\n", monkeypatch)
    (tmp_path / "self").write_text("0::/\n")
    monkeypatch.setattr(cgroup, "SELF_CGROUP", tmp_path / "self")
    (root / "cgroup.subtree_control").write_text("\n")
    (root / "cgroup.procs").write_text("1\n1234\n")
    assert cgroup._root() == (root, "v2")
    assert (root / "cgroup.subtree_control").read_text() == "+memory" and not (root / cgroup.LEAF).exists()
    assert (root / "cgroup.procs").read_text() == "1\n1234\n"


def test_an_evaluator_killed_with_9_leaves_no_cgroup_for_long(tmp_path, monkeypatch):
    """The next cage sweeps the empty cgroups of evaluators that are gone, and keeps those of live ones."""
    _fake_v2(tmp_path / "cg", "memory\n", monkeypatch)
    folder, _ = cgroup._root()
    gone = folder / "kernelevolve-999999999-0"  # no such process
    alive = folder / "kernelevolve-1-0"  # init: always there
    gone.mkdir()
    alive.mkdir()
    cgroup.MemoryCage(1 << 30)
    assert not gone.exists() and alive.exists()


def test_a_hierarchy_that_takes_no_process_is_not_used(tmp_path, monkeypatch):
    """A cgroup can be made but no process moved into it (as the worker moves itself in eval/launch/confine.py): the
    probe
    says why, and leaves neither its cgroup nor its process behind."""
    real_write = Path.write_text

    def refused(self, data, *args, **kwargs):
        if self.name == "cgroup.procs":
            raise PermissionError(1, "Operation not permitted", str(self))
        return real_write(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", refused)
    assert cgroup._moves_into(tmp_path) == (
        f"cannot move a process into a cgroup under {tmp_path} (Operation not permitted)"
    )
    assert list(tmp_path.iterdir()) == []
