"""Two processes on one GPU, as the judge split has them: the parent's clock around a request whose device work
(a spin) lasts X us in the child, then a read of its own. wall - X against X, with the parent blocking on the
pipe or polling it, the child synchronizing (torch) or polling an event, the read on the parent's own memory or
on memory the child shares by IPC handle."""

import statistics
import sys
import time

import torch
import torch.multiprocessing as mp


def child(conn):
    dev = torch.device("cuda")
    out = torch.zeros(1 << 20, device=dev)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    s0, e0 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s0.record()
    torch.cuda._sleep(10_000_000)
    e0.record()
    e0.synchronize()
    rate = 10_000_000 / (s0.elapsed_time(e0) * 1e3)
    conn.send((rate, out))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        us, mode = msg
        start.record()
        if us:
            torch.cuda._sleep(int(rate * us))
        out.add_(1)
        end.record()
        if mode == "poll":
            while not end.query():
                pass
        else:
            torch.cuda.synchronize()
        conn.send(start.elapsed_time(end))


def main():
    mp.set_start_method("spawn")
    a, b = mp.Pipe()
    p = mp.Process(target=child, args=(b,))
    p.start()
    dev = torch.device("cuda")
    rate, shared = a.recv()
    own = torch.zeros(1 << 20, device=dev)
    idx = torch.randint(0, 1 << 20, (64,), device=dev)
    torch.cuda.synchronize()
    rows = []
    for parent in ("block", "poll"):
        for childmode in ("sync", "poll"):
            for target in ("own", "ipc"):
                for us in (0, 100, 300, 1000, 2000):
                    xs = []
                    for _ in range(15):
                        t0 = time.perf_counter()
                        a.send((us, childmode))
                        if parent == "poll":
                            while not a.poll(0):
                                pass
                        dev_ms = a.recv()
                        v = (own if target == "own" else shared)[idx].sum().item()  # noqa: F841
                        torch.cuda.synchronize()
                        xs.append((time.perf_counter() - t0) * 1e3 - dev_ms)
                    rows.append((parent, childmode, target, us, min(xs), statistics.median(xs), max(xs)))
    a.send(None)
    p.join()
    print(torch.cuda.get_device_name(), "cpus", len(__import__("os").sched_getaffinity(0)))
    print("parent child read spin_us | wall-minus-device ms: min median max")
    for r in rows:
        print(f"{r[0]:6} {r[1]:5} {r[2]:4} {r[3]:5} | {r[4]:.4f} {r[5]:.4f} {r[6]:.4f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
