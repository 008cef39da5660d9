"""`kernelevolve kb search`: what deep search would inject into a prompt."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from kernelevolve.cli.common import app, usage_error

kb = typer.Typer(help="The knowledge base.", no_args_is_help=True)
app.add_typer(kb, name="kb")


@kb.command("search")
def kb_search(
    query: str = typer.Argument(..., help="what the prompt is about, e.g. 'memory-bound softmax hopper'"),
    platform: str | None = typer.Option(None, help="cuda, rocm or cpu"),
    arch: str | None = typer.Option(None, help="ampere, hopper, blackwell, cdna3, x86"),
    bottleneck: str | None = typer.Option(None, help="memory, compute, launch, latency, correctness"),
    phase: str | None = typer.Option(None, help="draft, refine or debug"),
    budget: int = typer.Option(1500, help="token budget of the returned snippets"),
) -> None:
    """Stage 1 selects documents by platform, architecture, bottleneck and phase; stage 2 ranks their sections
    with BM25 and returns the best within the budget."""
    from kernelevolve.agents.retrieval import KnowledgeBase

    try:
        base = KnowledgeBase()
    except (FileNotFoundError, ValueError) as e:
        raise usage_error(str(e)) from None
    snippets = base.search(
        query, platform=platform, arch=arch, bottleneck=bottleneck, phase=phase, budget_tokens=budget
    )
    console = Console()
    if not snippets:
        console.print("no matching knowledge")
        return
    for sn in snippets:
        console.print(
            Text.assemble((str(sn.path), "bold"), f" — {sn.heading}  (score {sn.score:.2f})"), highlight=False
        )
        console.print(Markdown(sn.text))
