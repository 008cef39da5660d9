"""Platforms, language detection and device peaks."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.platforms import PLATFORMS, default_target, get_platform
from kernelevolve.problem.candidate import detect_languages
from tests.conftest import CANDIDATES, EXAMPLES


def test_platforms_know_their_languages():
    cpu = get_platform("cpu")
    assert cpu.unsupported(["cuda"]) == ["cuda"] and cpu.unsupported(["cpp", "triton"]) == []
    assert cpu.is_interpreted(["triton"]) and not cpu.is_interpreted(["cpp"])
    assert get_platform("cuda").compile_baseline and not cpu.compile_baseline
    assert default_target() in PLATFORMS
    with pytest.raises(ValueError, match="unknown target"):
        get_platform("tpu")


@pytest.mark.parametrize(
    "path,langs",
    [
        (EXAMPLES / "softmax" / "candidate_triton.py", ["triton"]),
        (EXAMPLES / "softmax" / "candidate_cpp.py", ["cpp"]),
        (CANDIDATES / "segfault_cpp.py", ["cpp"]),
        (CANDIDATES / "relu_ok.py", ["pytorch"]),
    ],
)
def test_language_detection(path, langs):
    assert detect_languages(path.read_text()) == langs


def test_cuda_sources_are_cuda():
    src = (
        "from torch.utils.cpp_extension import load_inline\nm = load_inline(name='x', cpp_sources='', cuda_sources='')"
    )
    assert detect_languages(src) == ["cuda"]


def test_cuda_candidate_is_rejected_on_cpu(cpu_evaluator, relu_problem, tmp_path):
    from kernelevolve.result import Status

    cand = tmp_path / "c.py"
    cand.write_text(
        "import torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return load_inline(name='x', cpp_sources='', cuda_sources='')\n"
    )
    result = cpu_evaluator.evaluate(relu_problem, cand)
    assert result.status is Status.REJECTED and "cuda kernels cannot run on the cpu target" in result.reason


def test_peaks_measured_once_and_cached(tmp_path, monkeypatch):
    from kernelevolve.platforms import peaks as peaks_mod

    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path))
    first = peaks_mod.peaks(torch.device("cpu"))
    assert first.bandwidth_gbs > 0.1 and first.fp32_tflops > 0
    assert (tmp_path / "peaks" / "peaks.json").is_file()
    monkeypatch.setattr(peaks_mod, "measure", lambda device: pytest.fail("measured twice"))
    assert peaks_mod.peaks(torch.device("cpu")) == first
