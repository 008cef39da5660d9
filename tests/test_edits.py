"""apply_response: whole files and SEARCH/REPLACE edits become the kernel the model meant, or an actionable error."""

from __future__ import annotations

import ast
import warnings

import pytest

from kernelevolve.operators.edits import EditError, apply_response

PARENT = """\
import torch
import torch.nn as nn

BLOCK = 1024


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.relu(x)
        y = y * 2
        return y
"""

NEW_FILE = """\
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2
"""


def edit(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


# ---------------------------------------------------------------- whole files


def test_whole_file_in_a_fence():
    response = f"I fused the two ops.\n\n```python\n{NEW_FILE}```\n\nThis saves a pass over memory."
    assert apply_response(response, PARENT) == (NEW_FILE, "file")
    assert apply_response(response, None) == (NEW_FILE, "file")


def test_whole_file_without_a_fence():
    assert apply_response("\n\n" + NEW_FILE, None) == (NEW_FILE, "file")


def test_largest_python_block_defining_modelnew_wins():
    response = (
        "The CUDA part:\n```cpp\n__global__ void k() {}\n```\n"
        "A helper I considered:\n```python\ndef helper():\n    return 1\n```\n"
        f"The kernel:\n```py\n{NEW_FILE}```\n"
    )
    assert apply_response(response, PARENT) == (NEW_FILE, "file")


def test_fence_indented_in_a_list_item():
    indented = "".join("   " + line if line.strip() else line for line in NEW_FILE.splitlines(keepends=True))
    response = f"1. The new file:\n   ```python\n{indented}   ```\n"
    assert apply_response(response, PARENT) == (NEW_FILE, "file")


def test_code_block_without_modelnew():
    with pytest.raises(EditError, match="does not define class ModelNew"):
        apply_response("```python\nimport torch\n\nclass Model:\n    pass\n```", PARENT)


def test_modelnew_only_nested_is_not_defined():
    source = "def make():\n    class ModelNew:\n        pass\n    return ModelNew\n"
    with pytest.raises(EditError, match="does not define class ModelNew at module level"):
        apply_response(f"```python\n{source}```", None)


def test_whole_file_with_syntax_error():
    broken = NEW_FILE.replace("return torch.relu(x) * 2", "return torch.relu(x * 2")
    with pytest.raises(EditError, match=r"code block has a syntax error at line 7") as caught:
        apply_response(f"```python\n{broken}```", PARENT)
    assert "return torch.relu(x * 2" in str(caught.value)  # the offending line is quoted


def test_compile_time_errors_are_caught_too():
    with pytest.raises(EditError, match="'return' outside function"):
        apply_response(f"```python\n{NEW_FILE}return 1\n```", None)


def test_unclosed_fence_means_the_response_was_cut_off():
    truncated = "```python\n" + NEW_FILE.split("    def forward")[0]
    with pytest.raises(EditError, match="never closed; the response may have been cut off"):
        apply_response(truncated, None)
    with pytest.raises(EditError, match="never closed"):  # cut inside forward: does not parse
        apply_response("```python\n" + NEW_FILE.split("relu(")[0] + "relu(", None)


def test_a_whole_file_missing_only_its_closing_fence_is_used():
    """Seen from a capable model answering our prompts: 5 of 9 drafts ended with the file's last line and no
    closing fence, and were rejected as cut off."""
    source, kind = apply_response("A faster kernel.\n\n```python\n" + NEW_FILE, None)
    assert kind == "file" and source == NEW_FILE


@pytest.mark.parametrize("response", ["", "I could not find a faster kernel, sorry.", "```\n```", "ok"])
def test_garbage_response(response):
    with pytest.raises(EditError, match="no code block or SEARCH/REPLACE edit found|does not define class ModelNew"):
        apply_response(response, PARENT)


def test_only_non_python_blocks():
    with pytest.raises(EditError, match=r"no ```python code block \(only cuda\)"):
        apply_response("```cuda\n__global__ void k() {}\n```", PARENT)


def test_unfenced_python_with_prose_reports_the_syntax_error():
    with pytest.raises(EditError, match="has no ```python block.*syntax error at line 1"):
        apply_response("Here is the kernel:\n" + NEW_FILE, None)


def test_crlf_whole_file():
    response = f"```python\n{NEW_FILE}```\n".replace("\n", "\r\n")
    assert apply_response(response, PARENT) == (NEW_FILE, "file")


# ---------------------------------------------------------------- SEARCH/REPLACE


def test_one_edit_block():
    response = "Fuse:\n```python\n" + edit("        y = y * 2\n", "        y = y * 3\n") + "```\n"
    source, kind = apply_response(response, PARENT)
    assert kind == "edit"
    assert source == PARENT.replace("y = y * 2", "y = y * 3")


def test_several_edit_blocks_apply_in_order():
    response = (
        "First the constant:\n"
        + edit("BLOCK = 1024\n", "BLOCK = 2048\nWARPS = 8\n")
        + "then the body, twice:\n```python\n"
        + edit("        y = torch.relu(x)\n        y = y * 2\n", "        y = torch.relu(x) * 2\n")
        + "```\n```python\n"
        + edit("        y = torch.relu(x) * 2\n", "        y = torch.relu(x) * WARPS\n")  # sees block 2's result
        + "```"
    )
    source, kind = apply_response(response, PARENT)
    assert kind == "edit"
    assert "BLOCK = 2048\nWARPS = 8\n" in source
    assert "        y = torch.relu(x) * WARPS\n        return y\n" in source
    assert "y = y * 2" not in source


def test_edit_deleting_lines():
    source, _ = apply_response(edit("        y = y * 2\n", ""), PARENT)
    assert source == PARENT.replace("        y = y * 2\n", "")


def test_edit_indented_four_less_is_reindented():
    response = edit(
        "def forward(self, x):\n    y = torch.relu(x)\n", "def forward(self, x):\n    y = torch.sigmoid(x)\n"
    )
    source, _ = apply_response(response, PARENT)
    assert source == PARENT.replace("torch.relu", "torch.sigmoid")


def test_edit_indented_more_is_reindented():
    search = "            y = y * 2\n            return y\n"
    replace = "            if BLOCK > 1:\n                y = y * 2\n            return y\n"
    source, _ = apply_response(edit(search, replace), PARENT)
    assert "        if BLOCK > 1:\n            y = y * 2\n        return y\n" in source


def test_edit_shifted_left_past_column_zero_is_an_error():
    search = "            y = y * 2\n"  # 4 columns deeper than the kernel
    replace = "  y = y * 2\n"  # only 2 columns, so it cannot move 4 columns left
    with pytest.raises(EditError, match="cannot be shifted the same way"):
        apply_response(edit(search, replace), PARENT)


def test_edit_with_trailing_spaces():
    response = edit("        y = torch.relu(x)   \n        y = y * 2\t\n", "        y = torch.relu(x) * 2\n")
    source, _ = apply_response(response, PARENT)
    assert "        y = torch.relu(x) * 2\n        return y\n" in source


def test_edit_ignoring_blank_line_differences():
    search = "    def __init__(self):\n        super().__init__()\n    def forward(self, x):\n"
    replace = (
        "    def __init__(self):\n        super().__init__()\n        self.scale = 2\n\n    def forward(self, x):\n"
    )
    source, _ = apply_response(edit(search, replace), PARENT)
    assert "        self.scale = 2\n\n    def forward(self, x):\n" in source
    assert source.count("\n\n\n") == PARENT.count("\n\n\n")  # no blank lines added or lost around it


def test_exact_match_is_preferred_over_a_tolerant_one():
    parent = PARENT + "\n\ndef helper(y):\n    y = y * 2\n    return y\n"
    source, _ = apply_response(edit("    y = y * 2\n", "    y = y * 4\n"), parent)
    assert source == parent.replace("    y = y * 2\n    return y\n", "    y = y * 4\n    return y\n")
    assert "        y = y * 2\n" in source  # the method's line, which matched only with an indentation shift, is kept


def test_ambiguous_match_is_an_error():
    parent = PARENT.replace("        y = y * 2\n", "        y = y * 2\n        y = y * 2\n")
    with pytest.raises(
        EditError, match=r"SEARCH block 1 matches the kernel in 2 places: line 13, line 14\. Add surrounding lines"
    ):
        apply_response(edit("        y = y * 2\n", "        y = y * 3\n"), parent)


def test_ambiguous_after_normalisation_is_an_error():
    parent = PARENT + "\n\ndef helper(y):\n        y = y * 2\n        return y\n"
    with pytest.raises(EditError, match=r"matches the kernel in 2 places \(ignoring indentation\)"):
        apply_response(edit("y = y * 2\nreturn y\n", "return y * 2\n"), parent)


def test_no_match_names_the_block_and_the_closest_lines():
    parent_lines = PARENT.splitlines()
    response = edit("BLOCK = 1024\n", "BLOCK = 512\n") + edit(
        "    def forward(self, x):\n        y = torch.relu(x)\n        y = y + 2\n", "    pass\n"
    )
    with pytest.raises(EditError) as caught:
        apply_response(response, PARENT)
    message = str(caught.value)
    assert message.startswith("SEARCH block 2 did not match the kernel")
    assert "closest lines were (lines 11-13)" in message
    assert parent_lines[12] in message  # "y = y * 2", the kernel's real line
    assert "SEARCH line 3 is 'y = y + 2', kernel line 13 is 'y = y * 2'" in message
    assert "copy the lines exactly" in message.lower()


def test_no_match_on_an_empty_kernel():
    with pytest.raises(EditError, match="the kernel is empty"):
        apply_response(edit("x = 1\n", "x = 2\n"), "")


def test_empty_search_appends_only_to_an_empty_parent():
    source, kind = apply_response(edit("", NEW_FILE), "")
    assert (source, kind) == (NEW_FILE, "edit")
    with pytest.raises(EditError, match="SEARCH block 1 is empty, but the kernel is not"):
        apply_response(edit("", "x = 1\n"), PARENT)


def test_edit_result_with_syntax_error():
    with pytest.raises(EditError, match=r"the edited kernel has a syntax error at line 13") as caught:
        apply_response(edit("        y = y * 2\n", "        y = (y * 2\n"), PARENT)
    assert ">13 |         y = (y * 2" in str(caught.value)


def test_edit_removing_modelnew_is_an_error():
    with pytest.raises(EditError, match="does not define class ModelNew"):
        apply_response(edit("class ModelNew(nn.Module):\n", "class Model(nn.Module):\n"), PARENT)


def test_edits_without_a_parent():
    with pytest.raises(EditError, match="no current kernel to apply them to"):
        apply_response(edit("a\n", "b\n"), None)


@pytest.mark.parametrize(
    ("response", "problem"),
    [
        ("<<<<<<< SEARCH\nBLOCK = 1024\n=======\nBLOCK = 512\n", "not closed with >>>>>>> REPLACE"),
        ("<<<<<<< SEARCH\nBLOCK = 1024\n>>>>>>> REPLACE\n", "expected ======= after its SEARCH lines"),
        ("BLOCK = 512\n>>>>>>> REPLACE\n", "REPLACE without a <<<<<<< SEARCH"),
        ("<<<<<<< SEARCH\nBLOCK = 1024\n=======\nBLOCK = 512\n=======\n>>>>>>> REPLACE\n", "expected >>>>>>> REPLACE"),
    ],
)
def test_malformed_blocks(response, problem):
    with pytest.raises(EditError, match=problem):
        apply_response(response, PARENT)


def test_crlf_edit_response_and_parent():
    response = ("```python\n" + edit("        y = y * 2\n", "        y = y * 3\n") + "```\n").replace("\n", "\r\n")
    expected = PARENT.replace("y = y * 2", "y = y * 3")
    assert apply_response(response, PARENT) == (expected, "edit")
    assert apply_response(response, PARENT.replace("\n", "\r\n")) == (expected, "edit")


def test_parent_without_final_newline_keeps_it_that_way():
    parent = PARENT.rstrip("\n")
    source, _ = apply_response(edit("        return y\n", "        return y + 1\n"), parent)
    assert source == parent.replace("return y", "return y + 1")
    ast.parse(source)


def test_warnings_do_not_reject_a_kernel():
    source = NEW_FILE + 'PATTERN = "\\d+"\n'  # an invalid escape sequence: a warning, still valid Python
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert apply_response(f"```python\n{source}```", None) == (source, "file")


def test_blank_lines_around_search_are_not_duplicated():
    search = "\n\n\nclass ModelNew(nn.Module):\n"  # three blank lines; the kernel has two
    replace = "\n\n\n@torch.no_grad\nclass ModelNew(nn.Module):\n"
    source, _ = apply_response(edit(search, replace), PARENT)
    assert source == PARENT.replace("class ModelNew", "@torch.no_grad\nclass ModelNew")
