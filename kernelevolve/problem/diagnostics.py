"""What a failed build or load says, cut to what a person or a prompt needs: each distinct compiler error with its
context (at the candidate's own file and line where its C++/CUDA source is a string in that file), the compiler
command once and shortened, the candidate's own traceback frames. Torch-free: the prompt, the harness's build
client and candidate loading share it.
"""

from __future__ import annotations

import re
import traceback
from collections import Counter
from pathlib import Path

__all__ = ["BuildFailure", "build_failure", "candidate_frames", "compiler_diagnostics", "shorten_line", "source_line"]


class BuildFailure(RuntimeError):
    """An extension could not be built; the message says why in full (build_failure's text for a compile error),
    and is the candidate's reason as it is."""


LONG_LINE = 300  # characters: a longer log line is cut (a compiler command line is dropped whole)
MAX_DIAGNOSTICS = 6  # compiler error lines shown, with their context
DIAGNOSTIC_CHARS = 3000
ERROR_LINE = re.compile(
    r"\berror\b\s*(?:[A-Z]*\d+\s*)?:|\): error\b|\bfatal error\b|undefined (?:symbol|reference)|ptxas .*error",
    re.IGNORECASE,
)
COMMAND = re.compile(r"(?:\[\d+/\d+\]\s+)?(?<![\w+.])(?:\S*[/-])?(?:c\+\+|g\+\+|gcc|clang\+\+|clang|nvcc|hipcc|cc)\s+-")
COMMAND_FLAGS = 4  # options after the compiler's name that make a line a command line
FRAME = re.compile(r'^\s*File "[^"]+", line \d+')


def shorten_line(line: str, limit: int = LONG_LINE) -> str:
    """A log line a prompt can carry: a compiler command line (whole, or the start of one) is replaced by a note,
    other long lines are cut."""
    m = COMMAND.search(line)
    if m and line.count(" -", m.start()) >= COMMAND_FLAGS:
        head = line[: min(m.start(), limit)] + (" ..." if m.start() > limit else "")
        return head + f"<compiler command line of {len(line) - m.start():,} characters omitted>"
    return line if len(line) <= limit else line[:limit] + " ..."


def _windows(lines: list[str]) -> list[tuple[int, int]]:
    """Line ranges around each distinct compiler error: one line before (gcc's "In function"), the error, and the
    lines gcc and nvcc print under it (source, caret, fix-it), up to the next error or blank line."""
    seen: set[str] = set()
    out: list[tuple[int, int]] = []
    for i, line in enumerate(lines):
        if len(line) > LONG_LINE or not ERROR_LINE.search(line):
            continue
        key = re.sub(r"^\S*?([^/\s]+:\d+)", r"\1", line.strip())  # the same error from another path
        if key in seen:
            continue
        seen.add(key)
        end = i + 1
        while end < min(len(lines), i + 5) and lines[end].strip() and not ERROR_LINE.search(lines[end]):
            end += 1
        start = max(i - 1, out[-1][1] if out else 0)
        if start < i and not lines[start].strip():
            start = i
        out.append((start, end))
        if len(out) >= MAX_DIAGNOSTICS:
            break
    return out


# Paths of frames that are not the candidate's: this package (here, or as a log from another machine names it),
# installed packages, the standard library.
NOT_CANDIDATE = (
    str(Path(__file__).resolve().parents[1]),
    "/kernelevolve/eval/",
    "/kernelevolve/problem/",
    "/kernelevolve/platforms/",
    "site-packages",
    "dist-packages",
    "/lib/python3",
    "<frozen ",
)


def _harness_frame(line: str) -> bool:
    """A traceback frame of the harness, the standard library or an installed package, not of the candidate."""
    return any(part in line for part in NOT_CANDIDATE)


def _traceback_blocks(lines: list[str]) -> list[tuple[list[list[str]], list[str]]]:
    """Each traceback in the text: its frames (the File line and the code under it) and its exception message."""
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    blocks = []
    for n, first in enumerate(starts):
        body = lines[first + 1 : starts[n + 1] if n + 1 < len(starts) else len(lines)]
        frames: list[list[str]] = []
        i = 0
        while i < len(body) and (FRAME.match(body[i]) or (frames and body[i].startswith("    "))):
            if FRAME.match(body[i]):
                frames.append([body[i]])
            else:
                frames[-1].append(body[i])
            i += 1
        message = []
        for line in body[i:]:
            if not line.strip() or line.startswith(("The above exception", "During handling")):
                break
            message.append(line)
        if frames:
            blocks.append((frames, message))
    return blocks


def _last_traceback(lines: list[str], brief: bool) -> list[str]:
    """The last traceback through the candidate's own code (else the last one): the candidate's last frame, the
    frame that raised, and the exception (its first line when `brief`, else its head and tail)."""
    blocks = _traceback_blocks(lines)
    if not blocks:
        return []
    own = [b for b in blocks if any(not _harness_frame(f[0]) for f in b[0])]
    frames, message = (own or blocks)[-1]
    mine = [f for f in frames if not _harness_frame(f[0])]
    kept = ([mine[-1]] if mine and mine[-1] is not frames[-1] else []) + [frames[-1]]
    if brief:
        message = message[:1]
    elif len(message) > 12:
        message = message[:2] + ["    ..."] + message[-9:]
    return [line for f in kept for line in f] + message


def compiler_diagnostics(text: str) -> str:
    """What a failed build or load says, for a prompt: each distinct compiler error (g++, nvcc, ptxas, the linker)
    with its context, and the last frames of the traceback through the candidate's code; never a compiler
    command line. "" when the text holds neither."""
    lines = text.splitlines()
    parts = []
    windows = _windows(lines)
    if windows:
        shown = ["\n".join(shorten_line(x) for x in lines[a:b]) for a, b in windows]
        parts.append("Errors:\n" + "\n...\n".join(shown))
    frames = _last_traceback(lines, brief=bool(windows))
    if frames:
        parts.append("Last frames of the traceback:\n" + "\n".join(shorten_line(x) for x in frames))
    out = "\n\n".join(parts)
    return out if len(out) <= DIAGNOSTIC_CHARS else out[:DIAGNOSTIC_CHARS] + "\n..."


# A compiler's place in a file: gcc and clang `path:line[:col]:`, nvcc `path(line):`.
LOCATION = re.compile(r"^(?P<path>[^\s:()]+?)(?::(?P<line>\d+)(?::(?P<col>\d+))?|\((?P<nline>\d+)\)):")
GUTTER = re.compile(r"^(\s*)(\d+)( \|)")  # gcc's echo of the source line under an error: "   18 |     code"
VOTE_WINDOW = 6  # lines either side of an error that locate its source text in the candidate
MIN_VOTES = 2
COMMAND_HEAD, COMMAND_TAIL = 110, 110  # characters of a compiler command kept at either end
REST_LINES = 12  # lines of the log's rest kept (its tail)


def source_line(generated: str, line: int, candidate: str) -> int | None:
    """The candidate's line that line `line` of a generated file (torch's main.cpp or cuda.cu) came from, found by
    locating the text around it in the candidate (a load_inline source is a string literal there, its lines
    verbatim or indented alike); None where that text is not in the candidate, or is there twice alike."""
    lines, own = generated.splitlines(), candidate.splitlines()
    if not 1 <= line <= len(lines):
        return None
    where: dict[str, list[int]] = {}
    for j, text in enumerate(own):
        if len(text.strip()) > 2:  # a brace or a blank line places nothing
            where.setdefault(text.strip(), []).append(j)
    votes: Counter[int] = Counter()
    for i in range(max(0, line - 1 - VOTE_WINDOW), min(len(lines), line + VOTE_WINDOW)):
        for j in where.get(lines[i].strip(), ()):
            votes[j - i] += 1
    ranked = votes.most_common(2)
    if not ranked or ranked[0][1] < MIN_VOTES or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    mapped = line + ranked[0][0]
    return mapped if 1 <= mapped <= len(own) else None


def _short_command(command: str) -> str:
    if len(command) <= COMMAND_HEAD + COMMAND_TAIL + 20:
        return command
    return f"{command[:COMMAND_HEAD]} ... {command[-COMMAND_TAIL:]}"


def _command(line: str) -> str:
    """The compiler command a log line holds (from the compiler's name on, less ninja's "[1/2]"), else ""."""
    m = COMMAND.search(line)
    if not m or line.count(" -", m.start()) < COMMAND_FLAGS:
        return ""
    return re.sub(r"^\[\d+/\d+\]\s+", "", line[m.start() :].strip())


def _noise(line: str, previous: str) -> bool:
    """A line the rest of a build log leaves out: a command (or a long piece of one), a traceback's heading, a
    frame of the harness's (or the code line under it)."""
    if _command(line) or (len(line) > LONG_LINE and line.count(" -") >= COMMAND_FLAGS):
        return True
    if line.startswith(("Traceback (most recent call last)", "The above exception", "During handling")):
        return True
    harness = bool(FRAME.match(previous)) and _harness_frame(previous) and line.startswith("    ")
    return harness or (bool(FRAME.match(line)) and _harness_frame(line))


class _Places:
    """Rewrites the log's places in generated files: to the candidate's file and line where the source came from
    there (the generated place kept in brackets), else to the generated file's name without its build folder."""

    def __init__(self, generated: dict[str, str], candidate: tuple[str, str] | None) -> None:
        self.by_name = {Path(path).name: text for path, text in generated.items()}
        self.folders = sorted({str(Path(path).parent) + "/" for path in generated}, key=len, reverse=True)
        self.candidate = candidate

    def window(self, lines: list[str]) -> list[str]:
        """One error with its context; gcc's "main.cpp: In function" before it and its echo of the source line
        under it are the candidate's too, where the error is."""
        texts = [self.place(line) for line in lines]
        moved = next((m for _, m in texts if m), None)
        out = []
        for text, _ in texts:
            g = GUTTER.match(text)
            if moved and g and int(g[2]) == moved[1]:
                text = f"{moved[2]:>{len(g[1]) + len(g[2])}}{g[3]}{text[g.end() :]}"
            elif moved and self.candidate and text.startswith(moved[0] + ": "):
                text = self.candidate[0] + text[len(moved[0]) :]
            out.append(shorten_line(text))
        return out

    def place(self, line: str) -> tuple[str, tuple[str, int, int] | None]:
        """The line with its place rewritten, and (generated file, its line, the candidate's line) if mapped."""
        for folder in self.folders:
            line = line.replace(folder, "")
        m = LOCATION.match(line)
        if not m or m["path"] not in self.by_name or self.candidate is None:
            return line, None
        n = int(m["line"] or m["nline"])
        mapped = source_line(self.by_name[m["path"]], n, self.candidate[1])
        if mapped is None:
            return line, None
        col = f":{m['col']}" if m["col"] else ""
        return f"{self.candidate[0]}:{mapped}{col}:{line[m.end() :]} [{m[0].rstrip(':')}]", (m["path"], n, mapped)


def build_failure(
    name: str, log: str, generated: dict[str, str] | None = None, candidate: tuple[str, str] | None = None
) -> str:
    """A failed extension build, for a reason: each distinct compiler error with its context lines first, at the
    candidate's file and line where its source is a string in that file (`candidate`: its path and text;
    `generated`: the files torch wrote, by path, e.g. main.cpp), the generated file's own place in brackets; then
    the extension's name and the compiler command once, shortened; then the rest of the log's tail."""
    lines = log.splitlines()
    windows = _windows(lines)
    places = _Places(generated or {}, candidate)
    shown = [places.window(lines[a:b]) for a, b in windows]
    inside = {i for a, b in windows for i in range(a, b)}
    command = next((c for c in map(_command, lines) if c), "")
    head = f"Error building extension '{name}'"
    if command:
        head += f"; the compiler command ({len(command):,} characters): {_short_command(places.place(command)[0])}"
    rest: list[str] = []
    for i, line in enumerate(lines):
        text = shorten_line(places.place(line)[0]).rstrip()
        if i in inside or not text.strip() or _noise(line, lines[i - 1] if i else "") or text in rest:
            continue
        rest.append(text)
    parts = ["\n".join(w) for w in shown] + [head + (":" if rest else "")] + rest[-REST_LINES:]
    return "\n".join(parts)


def candidate_frames(error: BaseException, path: str) -> str:
    """The frames of the error's traceback in the candidate's own file (the harness's and torch's left out), as
    Python prints them; "" where none is."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
    return "".join(traceback.format_list(frames)).rstrip()
