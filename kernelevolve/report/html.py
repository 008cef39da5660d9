"""Report data to HTML through the templates: one file that opens without a network (plotly's JavaScript and the
data inlined), or the same page served live with its data fetched from the server."""

from __future__ import annotations

import json
import os
import re
from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from kernelevolve.report.bench import bench_data, load_results
from kernelevolve.report.data import clean, run_data
from kernelevolve.store.models import Run
from kernelevolve.store.store import Store

REPORT = "report.html"
RUN_REPORTS = "reports"  # a bench folder's per-problem run reports

_env = Environment(
    loader=PackageLoader("kernelevolve.report", "templates"),
    autoescape=select_autoescape(["html", "j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


class ReportError(Exception):
    """The report cannot be written where asked."""


@cache
def _static(name: str) -> Markup:
    """A stylesheet or script shipped beside the templates, inlined as it is."""
    return Markup((files("kernelevolve.report") / "templates" / name).read_text())


@cache
def plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _script_json(value: Any) -> Markup:
    """JSON safe inside <script>: no `</script>` or `<!--` can end it, since every `<` is escaped."""
    return Markup(json.dumps(clean(value), separators=(",", ":")).replace("<", "\\u003c"))


def _version() -> str:
    try:
        return package_version("kernelevolve")
    except PackageNotFoundError:
        return "unknown"


def render(
    page: str,
    data: dict[str, Any],
    *,
    title: str,
    heading: str,
    subtitle: str = "",
    live: dict[str, Any] | None = None,
    plotly_src: str | None = None,
) -> str:
    """page: run, bench, e2e or index. plotly_src: where the page loads plotly from (the live view, a bench folder's
    shared copy); None inlines it."""
    return _env.get_template(f"{page}.html.j2").render(
        page=page,
        title=title,
        heading=heading,
        subtitle=subtitle,
        version=_version(),
        css=_static("report.css"),
        plotly_js=Markup(plotly_js()) if plotly_src is None else "",
        plotly_src=plotly_src,
        data_json=_script_json(data),
        live=live,
        live_json=_script_json(live),
        common_js=_static("common.js"),
        page_js=_static(f"{page}.js"),
    )


def render_run(data: dict[str, Any], **kw: Any) -> str:
    run = data["run"]
    return render(
        "run",
        data,
        title=f"{run['problem']}: run {run['id']}",
        heading=f"KernelEvolve · {run['problem']}",
        subtitle=f"run {run['id']}",
        **kw,
    )


def render_bench(data: dict[str, Any], **kw: Any) -> str:
    return render(
        "bench",
        data,
        title=f"bench {data['suite']} on {data['target']}",
        heading=f"KernelEvolve · bench {data['suite']}",
        subtitle=f"{data['suite']} on {data['target']}",
        **kw,
    )


def render_e2e(data: dict[str, Any], **kw: Any) -> str:
    """The end-to-end proof's page (kernelevolve/model/e2e.py's data, as e2e.json holds it)."""
    return render(
        "e2e",
        data,
        title=f"end to end: {data['entry']} on {data['target']}",
        heading=f"KernelEvolve · end to end {data['entry']}",
        subtitle=f"{data['entry']} on {data['target']}",
        **kw,
    )


def write_e2e_report(path: Path, data: dict[str, Any]) -> Path:
    """The proof's page as one self-contained file (plotly inlined)."""
    return write(path, render_e2e(data))


def write(path: Path, text: str) -> Path:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except IsADirectoryError:
        raise ReportError(f"{path} is a folder: give the file to write, e.g. {path / REPORT}") from None
    except OSError as e:
        raise ReportError(
            f"cannot write the report {path}: {(e.strerror or str(e)).lower()}; pass another --out"
        ) from None
    return path


def write_run_report(
    store: Store,
    run: Run,
    out: Path,
    exported: list[dict[str, Any]] | None = None,
    plotly_src: str | None = None,
) -> Path:
    """The run's report as one self-contained file (plotly_src: a plotly file beside it instead, for bench)."""
    return write(out, render_run(run_data(store, run, exported=exported), plotly_src=plotly_src))


PLOTLY_FILE = "plotly.min.js"


def _shared_plotly(folder: Path) -> None:
    """One copy of plotly for a bench folder's pages (inlined, each would carry its several MB)."""
    path = folder / PLOTLY_FILE
    text = plotly_js()
    if not path.is_file() or path.stat().st_size != len(text.encode()):
        write(path, text)


def report_name(problem: str) -> str:
    """A bench problem's run report's file name (a KernelBench name may hold anything)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", problem) + ".html"


def write_bench_report(
    folder: Path, store: Store | None, out: Path | None = None, problems: set[str] | None = None
) -> tuple[Path, list[str]]:
    """The bench folder's report (default FOLDER/report.html), and the run report of each problem whose run the
    store holds, under FOLDER/reports/ (those in `problems` only, when given: bench writes each as its problem
    ends), with the exported module's measured cases beside the search's. Returns the path and notes: the runs
    the store does not hold."""
    results = load_results(folder)
    out = out or folder / REPORT
    notes, links = [], {}
    _shared_plotly(folder / RUN_REPORTS)
    for row in results["rows"]:
        name, run_id = row.get("name", ""), row.get("run", "")
        path = folder / RUN_REPORTS / report_name(name)
        if run_id and (problems is None or name in problems):
            run = store.get_run(run_id) if store is not None else None
            if run is None:
                notes.append(f"{name}: run {run_id} is not in the store, so it has no run report")
            else:
                exported = row.get("cases") if row.get("kernel") else None  # the exported module's evaluation
                write_run_report(store, run, path, exported=exported, plotly_src=PLOTLY_FILE)
        if path.is_file():
            links[name] = Path(os.path.relpath(path.resolve(), out.parent.resolve())).as_posix()
    shared = Path(os.path.relpath((folder / RUN_REPORTS / PLOTLY_FILE).resolve(), out.parent.resolve())).as_posix()
    write(out, render_bench(bench_data(results, links), plotly_src=shared))
    return out, notes
