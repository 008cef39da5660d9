"""Turn an LLM's answer to "improve this kernel" into the new kernel source.

The answer holds either a whole file (a ```python block defining `class ModelNew`) or aider-style SEARCH/REPLACE
edits against the parent. Edits are matched exactly first and then with growing tolerance (trailing whitespace, a
uniform indentation shift, blank lines), but a match must be unique: an edit that could land in two places, or in
none, is an EditError whose message tells the model how to fix its answer. Nothing is guessed, so the result is
always the file the model meant or an error.
"""

from __future__ import annotations

import ast
import difflib
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from kernelevolve.problem.problem import AST_LOCK, parse

_SEARCH = re.compile(r"^<{5,9} ?SEARCH$")
_DIVIDER = re.compile(r"^={5,9}$")
_REPLACE = re.compile(r"^>{5,9} ?REPLACE$")
_FENCE_OPEN = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[^\s`]*)[^`]*$")
_FENCE_CLOSE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})[ \t]*$")
_PYTHON_LANGS = {"", "python", "py", "python3", "py3"}
_DEFINES_MODELNEW = re.compile(r"^[ \t]*(class[ \t]+ModelNew\b|ModelNew[ \t]*=)", re.M)
_MAX_SHOWN_LINES = 40
_SHORTLIST = 20  # windows compared line by line to find the closest lines for a SEARCH that matches nowhere

FORMAT_HINT = (
    "Send either the complete new kernel file (defining class ModelNew) in one ```python block, or edits to the "
    "current kernel, each as:\n<<<<<<< SEARCH\n(lines copied exactly from the kernel)\n=======\n(the new lines)\n"
    ">>>>>>> REPLACE"
)


class EditError(Exception):
    """The response cannot be turned into a kernel; the message is written to be sent back to the LLM."""


def apply_response(response: str, parent_source: str | None) -> tuple[str, str]:
    """Return (new_source, kind): kind "edit" when SEARCH/REPLACE edits were applied to the parent, else "file"."""
    text = _to_lf(response)
    if _has_edit_markers(text):
        if parent_source is None:
            raise EditError(
                "the response has SEARCH/REPLACE edits but there is no current kernel to apply them to; send the "
                "complete file in one ```python block"
            )
        parent = _to_lf(parent_source)
        source = _apply_edits(parent, _parse_edit_blocks(text))
        _check_source(source, "the edited kernel", need_modelnew=_source_defines_modelnew(parent))
        return source, "edit"
    return _whole_file(text), "file"


# ---------------------------------------------------------------- parsing the response


@dataclass(frozen=True)
class _Block:
    number: int  # 1-based, as the model counts them
    search: list[str]
    replace: list[str]


@dataclass(frozen=True)
class _Fence:
    lang: str
    body: str
    line: int  # 1-based line of the opening fence in the response
    closed: bool


def _to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _has_edit_markers(text: str) -> bool:
    return any(_SEARCH.match(line.strip()) or _REPLACE.match(line.strip()) for line in text.split("\n"))


def _parse_edit_blocks(text: str) -> list[_Block]:
    """Read every SEARCH/REPLACE block in order; fences and prose around them are ignored."""
    blocks: list[_Block] = []
    state: str | None = None  # None outside a block, else "search" or "replace"
    search: list[str] = []
    replace: list[str] = []
    for lineno, line in enumerate(text.split("\n"), 1):
        marker = line.strip()
        number = len(blocks) + 1
        if state is None:
            if _SEARCH.match(marker):
                state, search, replace = "search", [], []
            elif _REPLACE.match(marker):
                raise EditError(
                    f"line {lineno} of the response has >>>>>>> REPLACE without a <<<<<<< SEARCH before it. "
                    + FORMAT_HINT
                )
        elif state == "search":
            if _DIVIDER.match(marker):
                state = "replace"
            elif _SEARCH.match(marker) or _REPLACE.match(marker):
                raise EditError(
                    f"SEARCH/REPLACE block {number} is malformed: expected ======= after its SEARCH lines but found "
                    f"{marker!r} (response line {lineno}). " + FORMAT_HINT
                )
            else:
                search.append(line)
        elif _REPLACE.match(marker):
            blocks.append(_Block(number, search, replace))
            state = None
        elif _SEARCH.match(marker) or _DIVIDER.match(marker):
            raise EditError(
                f"SEARCH/REPLACE block {number} is malformed: expected >>>>>>> REPLACE after its new lines but found "
                f"{marker!r} (response line {lineno}). " + FORMAT_HINT
            )
        else:
            replace.append(line)
    if state is not None:
        raise EditError(
            f"SEARCH/REPLACE block {len(blocks) + 1} is not closed with >>>>>>> REPLACE; the response may have been "
            "cut off. " + FORMAT_HINT
        )
    return blocks


def _fences(text: str) -> list[_Fence]:
    """Markdown code fences; content is de-indented by the fence's own indentation (fences inside list items)."""
    lines = text.split("\n")
    out: list[_Fence] = []
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        lang = opening["lang"].lower().strip("{.}")
        body: list[str] = []
        j, closed = i + 1, False
        while j < len(lines):
            closing = _FENCE_CLOSE.match(lines[j])
            if (
                closing
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and len(closing["indent"]) <= indent + 3
            ):
                closed = True
                break
            body.append(_dedent_upto(lines[j], indent))
            j += 1
        out.append(_Fence(lang, "\n".join(body), i + 1, closed))
        i = j + 1
    return out


def _dedent_upto(line: str, n: int) -> str:
    stripped = len(line) - len(line.lstrip(" "))
    return line[min(n, stripped) :]


def _whole_file(text: str) -> str:
    fences = _fences(text)
    if not fences:
        if _DEFINES_MODELNEW.search(text):
            source = text.strip("\n") + "\n"
            _check_source(source, "the response (read as a whole Python file, as it has no ```python block)")
            return source
        raise EditError("no code block or SEARCH/REPLACE edit found in the response. " + FORMAT_HINT)
    python = [f for f in fences if f.lang in _PYTHON_LANGS]
    if not python:
        langs = ", ".join(sorted({f.lang for f in fences}))
        raise EditError(f"the response has no ```python code block (only {langs}). " + FORMAT_HINT)
    defining = [f for f in python if _DEFINES_MODELNEW.search(f.body)]
    if not defining:
        raise EditError(
            "the response's code block does not define class ModelNew; send the complete kernel file, with "
            "class ModelNew(nn.Module), in one ```python block"
        )
    best = max(defining, key=lambda f: len(f.body))
    if not best.closed and not _complete_module(best.body):
        raise EditError(
            f"the ```python block opened at line {best.line} of the response is never closed; the response may have "
            "been cut off. Send the complete file, ending the block with ```"
        )
    source = best.body.strip("\n") + "\n"
    _check_source(source, "the response's code block")
    return source


# ---------------------------------------------------------------- applying edits


@dataclass(frozen=True)
class _Match:
    start: int  # first replaced line (0-based)
    end: int  # one past the last replaced line
    shift: int  # columns to add to (or, if negative, remove from) each REPLACE line
    prefix: str  # whitespace added when shift > 0, taken from the kernel's own indentation
    trim_blank_edges: bool  # blank lines around SEARCH were ignored, so drop as many around REPLACE


def _split_lines(text: str) -> tuple[list[str], bool]:
    if not text:
        return [], True
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
        return lines, True
    return lines, False


def _apply_edits(parent: str, blocks: list[_Block]) -> str:
    lines, ends_with_newline = _split_lines(parent)
    for block in blocks:
        lines = _apply_block(lines, block)
    return "\n".join(lines) + ("\n" if ends_with_newline and lines else "")


def _apply_block(lines: list[str], block: _Block) -> list[str]:
    if not any(line.strip() for line in block.search):
        if any(line.strip() for line in lines):
            raise EditError(
                f"SEARCH block {block.number} is empty, but the kernel is not; an empty SEARCH only works on an "
                "empty file. To add code, SEARCH for the lines just before where it goes and repeat them, followed "
                "by the new code, in REPLACE"
            )
        return list(block.replace)
    for level, tolerance in enumerate(_LEVELS):
        matches = _find(lines, block.search, tolerance)
        if len(matches) == 1:
            return _splice(lines, matches[0], block)
        if len(matches) > 1:
            places = ", ".join(_span(m.start, m.end) for m in matches[:10])
            more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
            qualifier = f" ({tolerance.label})" if level else ""
            raise EditError(
                f"SEARCH block {block.number} matches the kernel in {len(matches)} places{qualifier}: "
                f"{places}{more}. Add surrounding lines to the SEARCH (and REPLACE) so it matches exactly one place"
            )
    raise EditError(_no_match_message(lines, block))


def _splice(lines: list[str], match: _Match, block: _Block) -> list[str]:
    replace = _shift_lines(block.replace, match, block.number)
    if match.trim_blank_edges:
        replace = _trim_blank_edges(replace, block.search)
    return lines[: match.start] + replace + lines[match.end :]


def _shift_lines(replace: list[str], match: _Match, number: int) -> list[str]:
    if match.shift == 0:
        return list(replace)
    out = []
    for i, line in enumerate(replace, 1):
        if not line.strip():
            out.append(line)
        elif match.shift > 0:
            out.append(match.prefix + line)
        elif _indent(line) < -match.shift:
            raise EditError(
                f"SEARCH block {number} matched the kernel only when shifted {-match.shift} columns left, but its "
                f"REPLACE line {i} is indented less than that, so it cannot be shifted the same way. Copy the SEARCH "
                "lines with the kernel's exact indentation and indent REPLACE to match"
            )
        else:
            out.append(line[-match.shift :])
    return out


def _trim_blank_edges(replace: list[str], search: list[str]) -> list[str]:
    lead = _count_blank(search)
    trail = _count_blank(reversed(search))
    start = min(lead, _count_blank(replace))
    end = len(replace) - min(trail, _count_blank(reversed(replace)))
    return replace[start:end] if start < end else []


def _count_blank(lines: Iterable[str]) -> int:
    n = 0
    for line in lines:
        if line.strip():
            break
        n += 1
    return n


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _find(lines: list[str], search: list[str], tolerance: _Tolerance) -> list[_Match]:
    """Every place where `search` matches `lines` under the given tolerance."""
    skip_blank = tolerance.skip_blank
    index = [i for i, line in enumerate(lines) if line.strip()] if skip_blank else list(range(len(lines)))
    wanted = [line for line in search if line.strip()] if skip_blank else search
    matches = []
    for k in range(len(index) - len(wanted) + 1):
        window = [lines[i] for i in index[k : k + len(wanted)]]
        offset = _window_offset(window, wanted, rstrip=tolerance.rstrip, shift=tolerance.shift)
        if offset is None:
            continue
        first = next((line for line in window if line.strip()), "")
        prefix = first[: _indent(first)][:offset] if offset > 0 else ""
        matches.append(_Match(index[k], index[k + len(wanted) - 1] + 1, offset, prefix, skip_blank))
    return matches


def _window_offset(window: list[str], search: list[str], *, rstrip: bool, shift: bool) -> int | None:
    """The indentation offset (kernel minus SEARCH) at which the window matches, or None if it does not."""
    offset: int | None = None
    for have, want in zip(window, search):
        if not shift:
            if (have.rstrip() != want.rstrip()) if rstrip else (have != want):
                return None
            continue
        have_text, want_text = have.strip(), want.strip()
        if not have_text or not want_text:
            if have_text or want_text:
                return None
            continue
        if have_text != want_text:
            return None
        delta = _indent(have) - _indent(want)
        if offset is None:
            offset = delta
        elif delta != offset:
            return None
    return offset or 0


@dataclass(frozen=True)
class _Tolerance:
    rstrip: bool  # ignore trailing whitespace
    shift: bool  # allow one uniform indentation offset
    skip_blank: bool  # ignore blank lines
    label: str


# Tried in order; the first level at which the SEARCH matches anywhere decides.
_LEVELS = (
    _Tolerance(rstrip=False, shift=False, skip_blank=False, label="exactly"),
    _Tolerance(rstrip=True, shift=False, skip_blank=False, label="ignoring trailing whitespace"),
    _Tolerance(rstrip=True, shift=True, skip_blank=False, label="ignoring indentation"),
    _Tolerance(rstrip=True, shift=True, skip_blank=True, label="ignoring indentation and blank lines"),
)


# ---------------------------------------------------------------- messages


def _no_match_message(lines: list[str], block: _Block) -> str:
    head = f"SEARCH block {block.number} did not match the kernel"
    earlier = "block 1" if block.number == 2 else f"blocks 1-{block.number - 1}"
    order = (
        f" (blocks apply in order, so it was matched against the kernel after {earlier})" if block.number > 1 else ""
    )
    if not any(line.strip() for line in lines):
        return f"{head}: the kernel is empty{order}"
    start, end = _closest_window(lines, block.search)
    shown = _numbered(lines, start, end)
    diff = _first_difference(lines[start:end], block.search, start)
    return (
        f"{head}{order}; the closest lines were ({_span(start, end)}):\n{shown}\n{diff}"
        "Copy the lines exactly as they are in the kernel, or send the complete file instead"
    )


def _closest_window(lines: list[str], search: list[str]) -> tuple[int, int]:
    """The window of the kernel most like the SEARCH text, line by line, for the error message.

    Windows sharing the most whole lines with the SEARCH are shortlisted first, so that a long kernel does not
    cost a character-level comparison at every line; when no line is shared, every few lines are tried instead.
    """
    width = min(len(search), len(lines))
    starts = range(len(lines) - width + 1)
    wanted = {line.strip() for line in search if line.strip()}
    shared = [0]
    for line in lines:
        shared.append(shared[-1] + (line.strip() in wanted))
    score = {start: shared[start + width] - shared[start] for start in starts}
    if max(score.values()) > 0:
        candidates = sorted(starts, key=lambda start: -score[start])[:_SHORTLIST]
    else:
        candidates = list(starts[:: max(1, width // 4)])
    stripped_search = [line.strip() for line in search[:width]]
    best, best_start = -1.0, 0
    for start in sorted(candidates):
        pairs = zip((line.strip() for line in lines[start : start + width]), stripped_search)
        similarity = sum(_line_similarity(have, want) for have, want in pairs)
        if similarity > best:
            best, best_start = similarity, start
    return best_start, best_start + width


def _line_similarity(a: str, b: str) -> float:
    return 1.0 if a == b else difflib.SequenceMatcher(None, a, b).ratio()


def _first_difference(window: list[str], search: list[str], start: int) -> str:
    for i, (have, want) in enumerate(zip(window, search)):
        if have.strip() != want.strip():
            return (
                f"The first difference: SEARCH line {i + 1} is {want.strip()!r}, "
                f"kernel line {start + i + 1} is {have.strip()!r}.\n"
            )
    return "Those lines differ from the SEARCH lines only in indentation or blank lines, and not consistently.\n"


def _span(start: int, end: int) -> str:
    return f"line {start + 1}" if end - start == 1 else f"lines {start + 1}-{end}"


def _numbered(lines: list[str], start: int, end: int, mark: int | None = None) -> str:
    end = min(end, start + _MAX_SHOWN_LINES)
    width = len(str(end))
    rows = [f"{'>' if i == mark else ' '}{i + 1:>{width}} | {lines[i]}" for i in range(start, end)]
    return "\n".join(rows)


# ---------------------------------------------------------------- checking the result


def _check_source(source: str, what: str, *, need_modelnew: bool = True) -> None:
    try:
        with warnings.catch_warnings():  # e.g. an invalid escape sequence is a warning, not a broken kernel
            warnings.simplefilter("ignore")
            with AST_LOCK:
                tree = ast.parse(source)
                compile(tree, "<kernel>", "exec", dont_inherit=True)  # also catches e.g. 'return' outside function
    except SyntaxError as e:
        raise EditError(_syntax_message(source, what, e)) from None
    except (ValueError, RecursionError) as e:  # null bytes, absurd nesting
        raise EditError(f"{what} cannot be parsed as Python: {e}") from None
    if need_modelnew and not _defines_modelnew(tree):
        raise EditError(f"{what} does not define class ModelNew at module level")


def _syntax_message(source: str, what: str, error: SyntaxError) -> str:
    lineno = error.lineno or 0
    where = f"line {lineno}" + (f", column {error.offset}" if error.offset else "")
    message = f"{what} has a syntax error at {where}: {error.msg}"
    lines = source.split("\n")
    if 1 <= lineno <= len(lines):
        message += "\n" + _numbered(lines, max(0, lineno - 3), min(len(lines), lineno + 2), mark=lineno - 1)
    return message


def _source_defines_modelnew(source: str) -> bool:
    try:
        return _defines_modelnew(parse(source))
    except (SyntaxError, ValueError, RecursionError):
        return False


def _complete_module(body: str) -> bool:
    """A block left open at the end of the response that is still a whole kernel file (it parses and its
    ModelNew has a forward): only the closing fence is missing, as some models and chat tools drop it. A cut-off
    answer rarely parses, and one that does lacks what came after the cut."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = parse(body)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return any(
        isinstance(node, ast.ClassDef)
        and node.name == "ModelNew"
        and any(isinstance(f, ast.FunctionDef) and f.name == "forward" for f in node.body)
        for node in tree.body
    )


def _defines_modelnew(tree: ast.Module) -> bool:
    return any(_binds_modelnew(node) for node in tree.body)


def _binds_modelnew(node: ast.stmt) -> bool:
    if isinstance(node, ast.ClassDef):
        return node.name == "ModelNew"
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == "ModelNew"
    if isinstance(node, ast.ImportFrom):
        return any((alias.asname or alias.name) == "ModelNew" for alias in node.names)
    if isinstance(node, (ast.If, ast.Try)):
        children = node.body + node.orelse + getattr(node, "finalbody", [])
        children += [stmt for handler in getattr(node, "handlers", []) for stmt in handler.body]
        return any(_binds_modelnew(child) for child in children)
    return False


def strategy_of(response_text: str) -> str:
    """What the model said it changed: the prose before its first code block or edit."""
    head = re.split(r"```|<<<<<<< SEARCH", response_text, maxsplit=1)[0]
    return " ".join(head.split())[:240]
