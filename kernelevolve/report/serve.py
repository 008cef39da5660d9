"""The live view: a small ASGI app (Starlette, served by uvicorn) over a store opened read-only. Its pages are the
report's, whose script polls the JSON routes and redraws when a run's data changes, so a browser follows a search
as its nodes are committed; it never writes the store."""

from __future__ import annotations

import errno
import hashlib
import json
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from kernelevolve.report import html
from kernelevolve.report.data import clean, detail_json, run_data, runs_data
from kernelevolve.report.node import node_detail
from kernelevolve.store.store import Store, StoreError

PLOTLY_URL = "/static/plotly.js"


class ServeError(Exception):
    """The view cannot listen where asked (a port in use, a name that does not resolve)."""


def create_app(store: Store, *, refresh_s: float = 2.0) -> Starlette:
    """Pages: `/` (every run) and `/run/RUN`; their data: `/api/runs`, `/api/run/RUN` and `/api/run/RUN/node/N`
    (one node's record, fetched when it is clicked). Endpoints are plain functions: Starlette runs them in its
    thread pool, so a slow store read never blocks the loop."""
    interval_ms = max(100, int(1000 * refresh_s))

    def runs_payload() -> dict[str, Any]:
        runs = [{**r, "url": f"/run/{quote(r['id'])}"} for r in runs_data(store)]
        return {"runs": runs, "version": _digest(runs)}

    def index(request: Request) -> Response:
        live = {"data_url": "/api/runs", "interval_ms": interval_ms}
        page = html.render(
            "index",
            runs_payload(),
            title="KernelEvolve runs",
            heading="KernelEvolve · runs",
            subtitle=f"{store.runs_dir.resolve()} (read-only)",
            live=live,
            plotly_src=PLOTLY_URL,
        )
        return HTMLResponse(page)

    def run_page(request: Request) -> Response:
        run = store.get_run(request.path_params["run_id"])
        if run is None:
            return HTMLResponse(_missing(store, request.path_params["run_id"]), status_code=404)
        base = f"/api/run/{quote(run.id)}"
        live = {"data_url": base, "node_url": f"{base}/node/", "interval_ms": interval_ms}
        page = html.render_run(run_data(store, run, details=False), live=live, plotly_src=PLOTLY_URL)
        return HTMLResponse(page)

    def api_runs(request: Request) -> Response:
        return JSONResponse(clean(runs_payload()))

    def api_run(request: Request) -> Response:
        run = store.get_run(request.path_params["run_id"])
        if run is None:
            return _not_found(f"no run {request.path_params['run_id']!r} in {store.shown_url()}")
        return JSONResponse(clean(run_data(store, run, details=False)))

    def api_node(request: Request) -> Response:
        run = store.get_run(request.path_params["run_id"])
        step = request.path_params["step"]
        node = store.node_by_step(run.id, step) if run is not None else None
        if node is None:
            return _not_found(f"no node {step} in run {request.path_params['run_id']!r}")
        return JSONResponse(clean(detail_json(node_detail(store, run, node))))

    def plotly(request: Request) -> Response:
        return Response(html.plotly_js(), media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    def favicon(request: Request) -> Response:
        return Response(status_code=204)

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/run/{run_id}", run_page),
            Route("/api/runs", api_runs),
            Route("/api/run/{run_id}", api_run),
            Route("/api/run/{run_id}/node/{step:int}", api_node),
            Route(PLOTLY_URL, plotly),
            Route("/favicon.ico", favicon),
        ],
        exception_handlers={StoreError: _store_error},
    )
    return app


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(clean(value), sort_keys=True, default=str).encode()).hexdigest()[:16]


def _not_found(message: str) -> Response:
    return JSONResponse({"error": message}, status_code=404)


async def _store_error(request: Request, exc: Exception) -> Response:
    """A store that fails mid-way (a database gone away) is the page's error, not a traceback."""
    return JSONResponse({"error": str(exc)}, status_code=503)


def _missing(store: Store, run_id: str) -> str:
    from markupsafe import escape

    return (
        '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>no such run</title>'
        f"<p>No run {escape(run_id)!s} in {escape(store.shown_url())!s}. "
        '<a href="/">Every run of this store</a> is listed on the front page.</p>'
    )


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the server starts, so a port in use is one clear error (and port 0
    takes any free one, whose number the caller then prints)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as e:
        raise ServeError(
            f"cannot listen on {host}: {e.strerror}; pass --host 127.0.0.1 or an address of this machine"
        ) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise ServeError(
                f"port {port} on {host} is in use (another serve, or another program): pass --port with another "
                "number, or --port 0 for any free one"
            ) from None
        if e.errno == errno.EACCES:
            raise ServeError(
                f"port {port} on {host} needs privileges this user lacks: pass --port 1024 or above"
            ) from None
        if e.errno == errno.EADDRNOTAVAIL:
            raise ServeError(f"{host} is not an address of this machine: pass --host 127.0.0.1") from None
        raise ServeError(f"cannot listen on {host}:{port}: {(e.strerror or str(e)).lower()}") from None
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


def server(app: Starlette) -> Any:
    """The uvicorn server of the app, quiet but for errors (a live view logs no request lines)."""
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))


def serve(app: Starlette, sock: socket.socket, on_start: Callable[[], None] | None = None) -> None:
    """Serve on the bound socket until Ctrl-C (uvicorn stops gracefully on SIGINT and SIGTERM)."""
    running = server(app)
    if on_start is not None:
        on_start()
    running.run(sockets=[sock])
