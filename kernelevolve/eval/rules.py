"""The harness's rules as words and constants, torch-free and importing nothing of the package: the judge applies
them (eval/worker/) and the prompt states them (operators/universal.py) from this one place (docs/harness.md).
"""

from __future__ import annotations

# The measured rule: an output's error against float64 may reach this multiple of the reference's own rounding error.
BUDGET_MULTIPLE = 16.0

# The two rules a run can be judged by (`--correctness`), in words.
CORRECTNESS_HELP = (
    f"measured: within {BUDGET_MULTIPLE:g}x the reference's own rounding error plus one ulp against a float64 run, "
    "on several input distributions; kernelbench: atol = rtol = 1e-2 on get_inputs(), as KernelBench's evaluator"
)

# The input distributions every correctness trial cycles through, in order, and what each draws (problem/inputs.py
# draws them; a problem's INPUT_DISTRIBUTIONS picks among these names).
DISTRIBUTIONS = {
    "given": "get_inputs() exactly as written",
    "normal": "standard normal N(0, 1)",
    "large": "N(0, 1) x 100",
    "heavy_tailed": "Student-t with 2 degrees of freedom, clamped to +-1000 (a few large values among many small)",
    "uniform_signed": "uniform on [-1, 1)",
}
