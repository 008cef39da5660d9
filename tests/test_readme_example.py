"""The README's library example runs as written (on a smaller copy of its problem), so the README cannot drift."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT


def test_the_readmes_library_example_drives_a_search_from_python(tmp_path):
    (code,) = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    fixtures = tmp_path / "tests" / "fixtures"
    fixtures.mkdir(parents=True)
    (fixtures / "candidates").symlink_to(ROOT / "tests" / "fixtures" / "candidates")
    # the transpose at a quarter of its sizes, as tests/test_search.py runs it: the same builds, less timing
    text = (ROOT / "tests" / "fixtures" / "transpose.py").read_text().replace("N = 2048\n", "N = 1024\n")
    text = text.replace('SHAPE_CASES = [{"N": 2048}, {"N": 1000}]', 'SHAPE_CASES = [{"N": 1024}, {"N": 500}]')
    assert "1024" in text and "500" in text
    (fixtures / "transpose.py").write_text(text)
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    *_, speedup, kernel = p.stdout.split()
    assert "budget of 2 nodes reached" in p.stdout and float(speedup) > 0, p.stdout
    assert (tmp_path / "runs").is_dir() and kernel.startswith(str(tmp_path / "runs"))


def test_the_readmes_install_tries_the_pinned_torch_first_and_gives_a_newcomer_the_practical_advice():
    """Issue 46 item 10: PyTorch's CPU index alone could stall for minutes; .ci/run tries the pinned wheel first,
    and the README does the same. The advice a first search needs sits right after its first commands."""
    readme = (ROOT / "README.md").read_text()
    (pinned,) = re.findall(r'pip install -q "(torch==[\d.]+)" \|\| ', (ROOT / ".ci" / "run").read_text())
    install = readme.split("## Install and run")[1].split("\n## ")[0]
    torch_line = next(line for line in install.splitlines() if "pip install" in line and "torch" in line)
    assert torch_line.startswith(f'pip install "{pinned}" || pip install --retries 1 ')
    assert torch_line.endswith("--index-url https://download.pytorch.org/whl/cpu")
    for advice in ("slower than PyTorch eager", "TUNABLES", "OMP_NUM_THREADS", "idle machine", "COLUMNS", "--node N"):
        assert advice in install, advice
    assert len(readme.encode()) < 12 * 1024
