"""What moving the candidate out of the judge's process would cost (issue 19, item 1), measured before it is built.

The judge (this process) starts a runner process (spawned, torch imported, on the device), then for each size:
- a **round trip**: the judge hands the runner an input tensor and an output buffer it owns, both shared (shared
  memory on the CPU, CUDA IPC handles on a GPU, through torch.multiprocessing's reductions, handed over once), the
  runner computes ReLU into the buffer, and the judge checks it: the cost per correctness call;
- **the judge's clock around the runner's timed loop**: the runner times N calls with its own clock (CUDA events
  behind a device spin on a GPU, perf_counter on the CPU) and replies after a synchronise; the judge brackets the
  request with its clock. Their ratio, and the bracket of an empty request, say how tightly a judge outside the
  candidate's process can confirm the times a runner reports.

Usage: python benchmarks/judge_split_probe.py [--device cpu|cuda] [--sizes 4096,1048576,...] [--iters 200]
       [--out FILE.json]; prints a table last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _indexed(device_name: str) -> torch.device:
    """`cuda` names the current GPU; set_device needs its index."""
    device = torch.device(device_name)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def _runner(conn, device_name: str) -> None:
    try:
        _serve(conn, device_name)
    except BaseException as e:  # noqa: BLE001 - said to the judge, which would otherwise wait for a reply
        conn.send(("error", f"{type(e).__name__}: {e}"))


def _serve(conn, device_name: str) -> None:
    """The runner's loop: ('share', key, x, out) keeps them; ('relu', key) fills out; ('time', key, n) times n
    calls; ('empty',); ('stop',)."""
    device = _indexed(device_name)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.zeros(1, device=device)  # the context, before the first request is timed
    conn.send(("ready", time.time()))
    buffers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    while True:
        msg = conn.recv()
        kind = msg[0]
        if kind == "stop":
            return
        if kind == "empty":
            conn.send(("done",))
        elif kind == "share":  # the judge's tensors, handed over once per size, kept for the calls that follow
            _, key, x, out = msg
            buffers[key] = (x, out)
            conn.send(("done",))
        elif kind == "relu":
            x, out = buffers[msg[1]]
            torch.clamp_min(x, 0.0, out=out)
            _sync(device)
            conn.send(("done",))
        elif kind == "time":
            x, out = buffers[msg[1]]
            n = msg[2]
            if device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda._sleep(1_000_000)  # the host queues the calls behind a spin, so events see device time
                start.record()
                for _ in range(n):
                    torch.clamp_min(x, 0.0, out=out)
                end.record()
                end.synchronize()
                ms = start.elapsed_time(end)
            else:
                t0 = time.perf_counter()
                for _ in range(n):
                    torch.clamp_min(x, 0.0, out=out)
                ms = (time.perf_counter() - t0) * 1e3
            conn.send(("timed", ms))


def _ask(conn, *msg) -> tuple:
    conn.send(msg)
    if not conn.poll(120):
        raise RuntimeError("the runner did not reply within 120 s")
    reply = conn.recv()
    if reply[0] == "error":
        raise RuntimeError(f"the runner failed: {reply[1]}")
    return reply


def probe(device_name: str, sizes: list[int], iters: int, round_trips: int) -> dict:
    device = _indexed(device_name)
    ctx = mp.get_context("spawn")
    conn, theirs = ctx.Pipe()  # one duplex pipe: a Queue's feeder thread costs about 0.4 ms a message
    t0 = time.time()
    proc = ctx.Process(target=_runner, args=(theirs, device_name), daemon=True)
    proc.start()
    if not conn.poll(300):
        raise RuntimeError("the runner did not start within 300 s")
    ready = conn.recv()
    if ready[0] == "error":
        raise RuntimeError(f"the runner failed to start: {ready[1]}")
    out: dict = {"device": device_name, "runner_start_s": round(ready[1] - t0, 3), "sizes": []}
    if device.type == "cuda":
        out["gpu"] = torch.cuda.get_device_name(device)
    try:
        empties = []
        for _ in range(round_trips):
            t = time.perf_counter()
            _ask(conn, "empty")
            empties.append((time.perf_counter() - t) * 1e6)
        out["empty_request_us_median"] = round(statistics.median(empties), 1)
        for key, n in enumerate(sizes):
            x = torch.randn(n, device=device)
            buf = torch.empty(n, device=device)
            if device.type == "cpu":
                x.share_memory_()
                buf.share_memory_()
            t = time.perf_counter()
            _ask(conn, "share", key, x, buf)
            share_ms = (time.perf_counter() - t) * 1e3
            trips, wrong = [], 0
            for _ in range(round_trips):
                buf.fill_(float("nan"))
                _sync(device)
                t = time.perf_counter()
                _ask(conn, "relu", key)
                trips.append((time.perf_counter() - t) * 1e6)
                wrong += int(not torch.equal(buf, torch.relu(x)))
            local = []
            for _ in range(round_trips):  # the same call in the judge's own process, for the overhead
                _sync(device)
                t = time.perf_counter()
                torch.clamp_min(x, 0.0, out=buf)
                _sync(device)
                local.append((time.perf_counter() - t) * 1e6)
            t = time.perf_counter()
            reply = _ask(conn, "time", key, iters)
            bracket_ms = (time.perf_counter() - t) * 1e3
            claimed_ms = reply[1]
            out["sizes"].append(
                {
                    "elements": n,
                    "bytes": n * 4,
                    "share_ms": round(share_ms, 3),
                    "round_trip_us_median": round(statistics.median(trips), 1),
                    "same_call_in_judge_us_median": round(statistics.median(local), 1),
                    "wrong_outputs": wrong,
                    "timed_iters": iters,
                    "runner_claimed_ms": round(claimed_ms, 4),
                    "judge_bracket_ms": round(bracket_ms, 4),
                    "claimed_over_bracket": round(claimed_ms / bracket_ms, 4) if bracket_ms else None,
                }
            )
    finally:
        conn.send(("stop",))
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--sizes", default="1024,262144,4194304,16777216", help="elements per tensor (float32)")
    ap.add_argument("--iters", type=int, default=200, help="calls in the runner's timed loop")
    ap.add_argument("--round-trips", type=int, default=50)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    result = probe(args.device, sizes, args.iters, args.round_trips)
    result["versions"] = {"torch": torch.__version__, "python": sys.version.split()[0]}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    print(f"runner start {result['runner_start_s']} s; empty request {result['empty_request_us_median']} us")
    print("| elements | share ms | round trip us | same call in judge us | wrong | claimed ms | bracket ms | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in result["sizes"]:
        keys = ("elements", "share_ms", "round_trip_us_median", "same_call_in_judge_us_median", "wrong_outputs")
        keys += ("runner_claimed_ms", "judge_bracket_ms", "claimed_over_bracket")
        print("| " + " | ".join(str(s[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
