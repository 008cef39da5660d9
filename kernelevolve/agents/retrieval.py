"""Deep search over the knowledge base: two stages.

1. The index (`index.md`, a table of path | platform | arch | bottleneck | phase | summary) narrows the
   documents to those for this platform and architecture, bottleneck and phase ("any" matches all).
2. BM25 (bm25s) ranks sections of the selected documents against the query; the best sections are
   returned, whole, within a token budget.

The query (`knowledge_query`) is made of what the step is about: the operations the reference performs
(`reference_ops`, read from its source), the target's architecture, the bottleneck and the phase.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevolve.platforms import PLATFORMS
from kernelevolve.problem.problem import parse

KNOWLEDGE_ROOT = Path(__file__).resolve().parents[1] / "knowledge"
CHARS_PER_TOKEN = 4  # a rough, conservative ratio for English and code
SPECIFIC_BOOST = 1.5  # documents written for the target's own platform or architecture outrank general ones


@dataclass(frozen=True)
class Entry:
    path: str
    platform: str
    arch: str
    bottleneck: str
    phase: str
    summary: str


@dataclass(frozen=True)
class Snippet:
    path: str
    heading: str
    text: str
    score: float


def _cells(line: str) -> list[str]:
    return [c.strip().strip("`") for c in line.strip().strip("|").split("|")]


def parse_index(text: str) -> list[Entry]:
    """The rows of the index table; the header row names the columns (any order, case-insensitive)."""
    rows = [ln for ln in text.splitlines() if ln.strip().startswith("|")]
    if len(rows) < 2:
        return []
    header = [h.lower() for h in _cells(rows[0])]
    need = ("path", "platform", "arch", "bottleneck", "phase", "summary")
    if not all(n in header for n in need):
        raise ValueError(f"index.md: the table needs the columns {', '.join(need)}; found {', '.join(header)}")
    out = []
    for row in rows[1:]:
        cells = _cells(row)
        if len(cells) != len(header) or set(cells[0]) <= set("-: "):
            continue
        values = dict(zip(header, cells))
        out.append(Entry(*(values[n] for n in need)))
    return out


def _matches(value: str, wanted: str | None) -> bool:
    if wanted is None:
        return True
    options = {v.strip().lower() for v in value.split(",")}
    return "any" in options or wanted.lower() in options or not value.strip()


def _only(value: str, wanted: str) -> bool:
    """Written for this platform alone (GPU-wide documents, "cuda, rocm", are not specific to either)."""
    return [v.strip().lower() for v in value.split(",")] == [wanted.lower()]


def _sections(path: Path) -> list[tuple[str, str]]:
    """A document cut at its headings: (heading, text)."""
    text = path.read_text()
    parts = re.split(r"(?m)^(?=#{1,3} )", text)
    out = []
    for part in parts:
        if not part.strip():
            continue
        heading = part.splitlines()[0].lstrip("#").strip() if part.startswith("#") else path.stem
        out.append((heading, part.strip()))
    return out


class KnowledgeBase:
    def __init__(self, root: Path = KNOWLEDGE_ROOT):
        self.root = root
        index = root / "index.md"
        if not index.is_file():
            raise FileNotFoundError(f"no knowledge-base index at {index}")
        self.entries = parse_index(index.read_text())

    def select(
        self,
        platform: str | None = None,
        arch: str | None = None,
        bottleneck: str | None = None,
        phase: str | None = None,
    ) -> list[Entry]:
        """Stage 1: documents for this platform (and architecture), bottleneck and phase."""
        out = []
        for e in self.entries:
            if not _matches(e.platform, platform) or not _matches(e.bottleneck, bottleneck):
                continue
            if not _matches(e.phase, phase):
                continue
            if arch is not None and not _matches(e.arch, arch):
                continue
            archs = PLATFORMS[platform].archs if platform in PLATFORMS else ()  # the archs a target may have
            if arch is None and archs and e.arch.strip().lower() not in ("", "any"):
                if not any(_matches(e.arch, a) for a in archs):
                    continue
            if (self.root / e.path).is_file():
                out.append(e)
        return out

    def search(
        self,
        query: str,
        *,
        platform: str | None = None,
        arch: str | None = None,
        bottleneck: str | None = None,
        phase: str | None = None,
        budget_tokens: int = 1500,
        k: int = 8,
    ) -> list[Snippet]:
        """Stage 2: BM25 over the sections of the selected documents, best first, within the token budget."""
        import bm25s

        entries = self.select(platform, arch, bottleneck, phase) or self.select(platform, arch)
        corpus: list[tuple[str, str, str]] = []
        specific: list[bool] = []  # written for this architecture or platform, not for "any"
        for e in entries:
            sections = _sections(self.root / e.path)
            corpus.extend((e.path, h, t) for h, t in sections)
            own = (arch and _matches(e.arch, arch) and e.arch.lower() not in ("any", "")) or (
                platform and _only(e.platform, platform)
            )
            specific.extend([bool(own)] * len(sections))
        if not corpus or not query.strip():
            return []
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize([f"{h}\n{t}" for _, h, t in corpus], stopwords="en", show_progress=False),
            show_progress=False,
        )
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = retriever.retrieve(tokens, k=len(corpus), show_progress=False)
        ranked = sorted(
            ((float(s) * (SPECIFIC_BOOST if specific[int(i)] else 1.0), int(i)) for i, s in zip(docs[0], scores[0])),
            reverse=True,
        )[:k]
        out, used = [], 0
        for score, i in ranked:
            if score <= 0:
                continue
            path, heading, text = corpus[i]
            cost = len(text) // CHARS_PER_TOKEN + 1
            if used + cost > budget_tokens:
                continue
            used += cost
            out.append(Snippet(path, heading, text, float(score)))
        return out


# Calls that shape, move or describe tensors: not the operations a kernel is about.
NOT_OPS = frozenset(
    (
        "size dim shape numel view reshape contiguous to float half double int long bool bfloat16 unsqueeze "
        "squeeze expand expand_as flatten unflatten clone detach item tolist type type_as cpu cuda empty "
        "empty_like zeros zeros_like ones ones_like full full_like tensor as_tensor arange super Parameter "
        "register_buffer narrow split chunk stride append extend range len list tuple enumerate zip isinstance "
        "print no_grad flags randn rand randint normal_ uniform_ manual_seed"
    ).split()
)
BOTTLENECK_WORDS = {
    "memory": "memory-bound bandwidth coalesced fusion bytes",
    "compute": "compute-bound vectorise tensor cores tiles throughput",
    "launch": "launch overhead fuse launches small",
    "latency": "latency occupancy in flight",
    "correctness": "error fix correctness",
}
PHASE_WORDS = {
    "draft": "first kernel skeleton template",
    "refine": "optimise faster tuning",
    "debug": "debug error fix failing",
}


def _snake(name: str) -> str:
    """LayerNorm -> layer_norm, Conv1d -> conv1d, GELU -> gelu."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower()


def reference_ops(source: str) -> list[str]:
    """What the reference computes, from its source: torch functions and tensor methods called in Model's
    methods, nn modules constructed in its __init__ (as snake-case names), `@` as matmul; in order, once each."""
    try:
        tree = parse(source)
    except SyntaxError:
        return []
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        return []
    helpers = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n is not model}
    found: list[str] = []
    for node in _reached(model, helpers):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if not name or name in NOT_OPS or name.startswith("_"):
                continue
            if isinstance(node.func, ast.Attribute) and _is_self(node.func.value):
                continue  # self.conv(x): the module it holds is named where it is built
            found.append("transpose" if name == "t" else _snake(name) if name[:1].isupper() else name)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
            found.append("matmul")
    return [op for op in dict.fromkeys(found) if op not in ("module", "model")]


def _reached(root: ast.AST, helpers: dict[str, ast.AST]) -> list[ast.AST]:
    """The nodes of `root` and of the module's functions and classes it names (a reference may delegate)."""
    out: list[ast.AST] = []
    work, seen = [root], {id(root)}
    while work:
        for node in ast.walk(work.pop()):
            out.append(node)
            if isinstance(node, ast.Name) and node.id in helpers and id(helpers[node.id]) not in seen:
                seen.add(id(helpers[node.id]))
                work.append(helpers[node.id])
    return out


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def knowledge_query(
    ops: list[str],
    *,
    platform: str,
    arch: str | None = None,
    isa: list[str] | None = None,
    bottleneck: str = "",
    phase: str = "draft",
    extra: str = "",
) -> str:
    """Deep search's query for one step: the operations, each also split at underscores and joined (layer_norm,
    layer norm, layernorm), the target's architecture, the bottleneck and the phase, and `extra` (the
    analysis's error class and advice)."""
    words: list[str] = []
    for op in ops:
        words.append(op)
        if "_" in op:
            words += [op.replace("_", " "), op.replace("_", "")]
    words.append(PLATFORMS[platform].retrieval_words or platform if platform in PLATFORMS else platform)
    if arch:
        words.append(arch)
    words += [f for f in isa or [] if f.startswith(("avx", "amx", "sve"))]
    words.append(BOTTLENECK_WORDS.get(bottleneck, ""))
    words.append(PHASE_WORDS.get(phase, phase))
    words.append(extra)
    return " ".join(w for w in words if w).strip()


def injected(snippets: list[Any]) -> list[str]:
    """The documents a prompt's knowledge came from, once each, in order."""
    return list(dict.fromkeys(sn.path for sn in snippets))
