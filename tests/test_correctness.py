"""The comparator."""

from __future__ import annotations

import torch

from kernelevolve.eval.worker.correctness import compare, inputs_unchanged, norm_bound, snapshot


def test_within_tolerance_passes_and_reports_errors():
    ref = torch.randn(100, dtype=torch.float32)
    cmp = compare(ref + 5e-5, ref, 1e-4, 1e-4)
    assert cmp.ok and 4e-5 < cmp.max_abs_err < 6e-5 and cmp.max_rel_err > 0


def test_outside_tolerance_fails_with_counts():
    ref = torch.zeros(10)
    out = ref.clone()
    out[3] = 1.0
    cmp = compare(out, ref, 1e-4, 1e-4)
    assert not cmp.ok and "1 of 10 elements" in cmp.reason and cmp.max_abs_err == 1.0


def test_shape_dtype_and_structure_are_checked():
    ref = torch.ones(4, 4)
    assert "shape" in compare(torch.ones(16), ref, 1e-4, 1e-4).reason
    assert "dtype" in compare(torch.ones(4, 4, dtype=torch.float64), ref, 1e-4, 1e-4).reason
    assert "2 values" in compare((ref, ref), ref, 1e-4, 1e-4).reason
    assert "expected a tensor" in compare(1.0, ref, 1e-4, 1e-4).reason


def test_nan_and_inf_are_checked():
    ref = torch.ones(8)
    out = ref.clone()
    out[0] = float("nan")
    assert "NaN" in compare(out, ref, 1e-4, 1e-4).reason
    out[0] = float("inf")
    assert "Inf" in compare(out, ref, 1e-4, 1e-4).reason
    both = torch.tensor([float("nan"), 1.0])
    assert compare(both.clone(), both, 1e-4, 1e-4).ok


def test_integer_outputs_must_match_exactly():
    ref = torch.arange(10)
    assert compare(ref.clone(), ref, 1e-4, 1e-4).ok
    assert not compare(ref + 1, ref, 1e-4, 1e-4).ok


def test_tuple_outputs_compare_each_leaf():
    a, b = torch.randn(3), torch.randn(5)
    assert compare((a.clone(), b.clone()), (a, b), 1e-4, 1e-4).ok
    assert "output 1" in compare((a.clone(), b + 1), (a, b), 1e-4, 1e-4).reason


def test_modified_inputs_are_detected():
    x = torch.randn(5)
    before = snapshot([x, 3])
    assert inputs_unchanged([x, 3], before) == ""
    x.add_(1)
    assert inputs_unchanged([x, 3], before) == "input 0 was modified by the candidate"


def test_tiny_outputs_need_the_normalised_error_bound():
    ref = torch.randn(1000) * 1e-6  # every element far below atol
    zeros = compare(torch.zeros_like(ref), ref, 1e-4, 1e-4)
    assert not zeros.ok and "tiny-output check" in zeros.reason and zeros.norm_err == 1.0
    constant = compare(torch.full_like(ref, float(ref.mean())), ref, 1e-4, 1e-4)
    assert not constant.ok and "tiny-output check" in constant.reason
    assert compare(ref * (1 + 1e-6), ref, 1e-4, 1e-4).ok
    assert compare(torch.zeros(5), torch.zeros(5), 1e-4, 1e-4).ok  # ||ref|| = 0: no bound


def test_norm_bound_passes_honest_half_precision_rounding():
    assert norm_bound(1e-4) == 1e-3 and norm_bound(1e-2) == 0.1 and norm_bound(1e-6) == 1e-3
    gen = torch.Generator().manual_seed(0)
    ref = torch.randn(4096, generator=gen)
    for dtype in (torch.float16, torch.bfloat16):
        rounded = ref.to(dtype)
        # a few ulps off; bounded, so that no draw lands outside the elementwise tolerance by chance
        noise = 4e-3 * torch.randn(4096, generator=gen).clamp(-2, 2)
        noisy = (rounded.float() * (1 + noise)).to(dtype)
        assert compare(noisy, rounded, 1e-2, 1e-2).ok, dtype


def test_non_finite_and_huge_values_take_the_exact_path():
    huge = torch.full((4,), 1e30)
    assert compare(huge.clone(), huge, 1e-4, 1e-4).ok
    poisoned = torch.full((4,), 3.39e38)
    assert not compare(poisoned, torch.ones(4), 1e-4, 1e-4).ok


def test_input_shape_changes_are_modifications():
    x = torch.randn(4, 4)
    before = snapshot([x])
    x.resize_(16)
    assert "shape or dtype changed" in inputs_unchanged([x], before)
