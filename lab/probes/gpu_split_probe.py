"""What a judge split on a GPU needs, measured before it is built (issue 19, item 1 on cuda).

The judge (this process) forks the candidate's process after importing torch and before CUDA exists in it (as the
cpu worker forks), then, with both processes on the GPU:

- **fork**: whether CUDA works in the forked process, and how long its context takes;
- **isolation**: tensors the judge shares are allocated in a private memory pool (`torch.cuda.MemPool`); a CUDA IPC
  handle opens the whole allocation segment a tensor lies in, so the probe checks (cuMemGetAddressRange) that a
  secret allocated outside the pool lies in another segment, and what range the other process can reach;
- **outputs**: the cost per call of an output handed back by IPC handle and cloned by the judge;
- **the judge's clock**: for each kernel, the candidate's process times it with the harness's Timer (CUDA events,
  L2 flush, device spin: the claim), then runs blocks of K back-to-back calls, as a CUDA graph replay and as plain
  launches, each block one request the judge brackets with its clock less an empty request's. The graph block is
  free of launch overhead; how close it comes to the claim says whether the judge's clock can bound a claim.

Usage: python benchmarks/gpu_split_probe.py [--out FILE.json]; prints a table last.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
from multiprocessing import Pipe
from pathlib import Path

import torch
import torch.multiprocessing  # noqa: F401 - registers the CUDA IPC reductions with the pipe's pickler

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

BLOCK_MS = 3.0


def _address_range(ptr: int) -> tuple[int, int]:
    """(base, size) of the allocation holding ptr (the driver API, in this process's context)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    rc = cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
    if rc:
        raise RuntimeError(f"cuMemGetAddressRange failed: {rc}")
    return base.value, size.value


def _kernels(device: torch.device) -> dict:
    """name -> (make inputs, the call)."""

    def chain(x):
        for _ in range(30):
            x = x + 1.0
        return x

    return {
        "relu_1k": (lambda: [torch.randn(1024, device=device)], lambda x: torch.relu(x)),
        "relu_256k": (lambda: [torch.randn(262144, device=device)], lambda x: torch.relu(x)),
        "relu_4m": (lambda: [torch.randn(4 << 20, device=device)], lambda x: torch.relu(x)),
        "relu_16m": (lambda: [torch.randn(16 << 20, device=device)], lambda x: torch.relu(x)),
        "chain30_4k": (lambda: [torch.randn(4096, device=device)], chain),
        "matmul_2048": (
            lambda: [torch.randn(2048, 2048, device=device), torch.randn(2048, 2048, device=device)],
            lambda a, b: a @ b,
        ),
    }


def _child(conn, device_index: int) -> None:
    t0 = time.perf_counter()
    device = torch.device("cuda", device_index)
    torch.cuda.set_device(device)
    torch.empty(1, device=device).zero_()
    conn.send(("ready", time.perf_counter() - t0))
    from kernelevolve.eval.worker.timing import Timer, TimerConfig

    timer = Timer(device, TimerConfig(max_iters=50, budget_s=0.3))
    kernels = _kernels(device)
    held: dict = {}
    graphs: dict = {}
    while True:
        msg = conn.recv()
        kind = msg[0]
        try:
            if kind == "stop":
                return
            if kind == "empty":
                torch.cuda.synchronize()
                conn.send(("ok", None))
            elif kind == "range":
                x = msg[1]
                held["range"] = x
                conn.send(("ok", _address_range(x.data_ptr())))
            elif kind == "output":  # a fresh output handed back by IPC handle
                x = msg[1] if len(msg) > 1 else held["out_in"]
                held["out_in"] = x
                out = torch.relu(x)
                torch.cuda.synchronize()
                conn.send(("ok", out))
            elif kind == "claim":
                name, inputs = msg[1], msg[2]
                fn = kernels[name][1]
                held[name] = inputs
                stats = timer.time_interleaved({"c": lambda inp, fn=fn: fn(*inp)}, [inputs])
                conn.send(("ok", stats["c"].median_ms))
            elif kind == "capture":
                name, k = msg[1], msg[2]
                fn, inputs = kernels[name][1], held[name]
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(2):
                        fn(*inputs)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for _ in range(k):
                        fn(*inputs)
                g.replay()
                torch.cuda.synchronize()
                graphs[name] = g
                conn.send(("ok", None))
            elif kind == "replay":
                graphs[msg[1]].replay()
                torch.cuda.synchronize()
                conn.send(("ok", None))
            elif kind == "plain":
                name, k = msg[1], msg[2]
                fn, inputs = kernels[name][1], held[name]
                for _ in range(k):
                    fn(*inputs)
                torch.cuda.synchronize()
                conn.send(("ok", None))
        except Exception as e:  # noqa: BLE001
            conn.send(("error", f"{type(e).__name__}: {e}"))


def _ask(conn, *msg):
    conn.send(msg)
    reply = conn.recv()
    if reply[0] == "error":
        raise RuntimeError(reply[1])
    return reply[1]


def _clocked(conn, *msg) -> float:
    t0 = time.perf_counter()
    _ask(conn, *msg)
    return (time.perf_counter() - t0) * 1e3


def probe(device_index: int) -> dict:
    judge, theirs = Pipe(duplex=True)
    t_fork = time.perf_counter()
    pid = os.fork()  # CUDA does not exist in this process yet
    if pid == 0:
        try:
            judge.close()
            _child(theirs, device_index)
        finally:
            os._exit(0)
    theirs.close()
    device = torch.device("cuda", device_index)
    torch.cuda.set_device(device)
    t0 = time.perf_counter()
    torch.empty(1, device=device).zero_()
    judge_ctx_s = time.perf_counter() - t0
    ready = judge.recv()
    out: dict = {
        "gpu": torch.cuda.get_device_name(device),
        "child_context_s": round(ready[1], 3),
        "judge_context_s": round(judge_ctx_s, 3),
        "both_ready_after_fork_s": round(time.perf_counter() - t_fork, 3),
    }
    try:
        # isolation: a pool's segment holds only the pool's tensors
        pool = torch.cuda.MemPool()
        secret = torch.randn(1 << 20, device=device)
        with torch.cuda.use_mem_pool(pool):
            shared = torch.randn(1 << 20, device=device)
            shared_small = torch.randn(100, device=device)
        seg_secret, seg_shared = _address_range(secret.data_ptr()), _address_range(shared.data_ptr())
        seg_small = _address_range(shared_small.data_ptr())
        t0 = time.perf_counter()
        reach = _ask(judge, "range", shared)
        share_ms = (time.perf_counter() - t0) * 1e3
        out["isolation"] = {
            "secret_segment": seg_secret,
            "shared_segment": seg_shared,
            "small_shared_segment": seg_small,
            "secret_in_shared_segment": seg_shared[0] <= secret.data_ptr() < seg_shared[0] + seg_shared[1],
            "child_reachable_bytes": reach[1],
            "share_ms": round(share_ms, 3),
        }
        # outputs handed back: per call
        empties = [_clocked(judge, "empty") for _ in range(30)]
        empty = statistics.median(empties)
        out["empty_request_ms"] = round(empty, 4)
        with torch.cuda.use_mem_pool(pool):
            x = torch.randn(1 << 20, device=device)
        first = time.perf_counter()
        got = _ask(judge, "output", x)
        mine = got.clone()
        first_ms = (time.perf_counter() - first) * 1e3
        del got
        trips, wrong = [], 0
        for _ in range(30):
            t0 = time.perf_counter()
            got = _ask(judge, "output")
            mine = got.clone()
            del got
            torch.cuda.synchronize()
            trips.append((time.perf_counter() - t0) * 1e3)
            wrong += int(not torch.equal(mine, torch.relu(x)))
        out["output_back"] = {
            "first_ms": round(first_ms, 3),
            "per_call_ms_median": round(statistics.median(trips), 3),
            "wrong": wrong,
        }
        # the judge's clock over blocks of calls
        rows = []
        for name, (make, _) in _kernels(device).items():
            with torch.cuda.use_mem_pool(pool):
                inputs = make()
            claim = _ask(judge, "claim", name, inputs)
            k = int(min(2000, max(10, BLOCK_MS / max(claim, 1e-4))))
            row = {"kernel": name, "claim_ms": round(claim, 5), "k": k}
            try:
                _ask(judge, "capture", name, k)
                walls = [_clocked(judge, "replay", name) for _ in range(7)]
                row["graph_block_ms_per_call"] = round((min(walls) - empty) / k, 5)
            except RuntimeError as e:
                row["graph_error"] = str(e)[:200]
            _ask(judge, "plain", name, k)
            walls = [_clocked(judge, "plain", name, k) for _ in range(7)]
            row["plain_block_ms_per_call"] = round((min(walls) - empty) / k, 5)
            for key in ("graph", "plain"):
                v = row.get(f"{key}_block_ms_per_call")
                if v is not None:
                    row[f"{key}_over_claim"] = round(v / claim, 3)
            rows.append(row)
        out["blocks"] = rows
    finally:
        judge.send(("stop",))
        os.waitpid(pid, 0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device-index", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    result = probe(args.device_index)
    result["versions"] = {"torch": torch.__version__, "python": sys.version.split()[0]}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "blocks"}, indent=1))
    print("| kernel | claim ms | K | graph block ms/call | graph/claim | plain block ms/call | plain/claim |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in result["blocks"]:
        cols = ("kernel", "claim_ms", "k", "graph_block_ms_per_call", "graph_over_claim", "plain_block_ms_per_call")
        print("| " + " | ".join(str(r.get(c, "-")) for c in (*cols, "plain_over_claim")) + " |")


if __name__ == "__main__":
    main()
