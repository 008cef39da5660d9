"""The knowledge base: every code sample is a correct candidate for its problem (on the cpu target, Triton in
its interpreter, under the GPU targets' kernel policy), and index.md catalogues exactly the documents of the
tree, with a source cited wherever a hardware document states numbers."""

from __future__ import annotations

import re

import pytest

from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.conftest import ROOT

KNOWLEDGE = ROOT / "kernelevolve" / "knowledge"
SAMPLES = sorted(p.parent.name for p in (KNOWLEDGE / "code_samples").glob("*/kernel.py"))
COLUMNS = ["path", "platform", "arch", "bottleneck", "phase", "summary"]
ALLOWED = {
    "platform": {"any", "cuda", "rocm", "cpu"},
    "arch": {"any", "ampere", "hopper", "blackwell", "cdna3", "x86"},
    "bottleneck": {"any", "memory", "compute", "launch", "latency", "correctness"},
    "phase": {"any", "draft", "refine", "debug"},
}


def index_rows() -> list[dict[str, str]]:
    lines = [ln for ln in (KNOWLEDGE / "index.md").read_text().splitlines() if ln.strip().startswith("|")]
    cells = [[c.strip().strip("`") for c in ln.strip().strip("|").split("|")] for ln in lines]
    assert cells and [c.lower() for c in cells[0]] == COLUMNS, cells[:1]
    return [dict(zip(COLUMNS, row)) for row in cells[2:]]


def test_every_sample_has_its_files():
    assert len(SAMPLES) >= 9, SAMPLES
    for name in SAMPLES:
        for f in ("problem.py", "kernel.py", "README.md"):
            assert (KNOWLEDGE / "code_samples" / name / f).is_file(), f"{name}/{f}"


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_is_correct_on_the_cpu_target(cpu_evaluator, name):
    folder = KNOWLEDGE / "code_samples" / name
    source = (folder / "kernel.py").read_text()
    assert re.search(r"^TUNABLES = \{", source, re.M), "a sample declares its TUNABLES"
    result = cpu_evaluator.evaluate(load_problem(folder / "problem.py"), folder / "kernel.py", require_kernel=True)
    assert result.status is Status.OK, (result.reason, result.log_tail)
    assert result.languages == ["triton"] and result.interpreted
    assert len(result.cases) >= 2 and all(c.correct for c in result.cases)


def test_index_lists_every_document_and_only_existing_ones():
    rows = index_rows()
    listed = [r["path"] for r in rows]
    assert len(listed) == len(set(listed)), "a document is listed twice"
    on_disk = {p.relative_to(KNOWLEDGE).as_posix() for p in KNOWLEDGE.rglob("*.md")} - {"index.md"}
    assert set(listed) == on_disk, (sorted(on_disk - set(listed)), sorted(set(listed) - on_disk))
    for row in rows:
        for column, allowed in ALLOWED.items():
            values = {v.strip() for v in row[column].split(",")}
            assert values <= allowed, (row["path"], column, values)
        assert len(row["summary"]) > 20, row["path"]


def test_hardware_documents_cite_their_numbers():
    citation = re.compile(r"https?://|whitepaper|datasheet|guide|manual|measured by KernelEvolve", re.I)
    number = re.compile(r"\b\d+(\.\d+)?\s*(KB|KiB|MB|MiB|GB|GiB|TB/s|GB/s|TFLOP/s|TFLOPS|SMs?|CUs?)\b")
    docs = sorted((KNOWLEDGE / "hardware").rglob("*.md"))
    assert len(docs) == 16, [d.name for d in docs]
    for doc in docs:
        text = doc.read_text()
        if number.search(text):
            assert citation.search(text), f"{doc.relative_to(KNOWLEDGE)} states figures without a source"


def test_documents_are_focused():
    for doc in KNOWLEDGE.rglob("*.md"):
        lines = len(doc.read_text().splitlines())
        assert 15 <= lines <= 200 or doc.name == "index.md", (doc.relative_to(KNOWLEDGE), lines)
