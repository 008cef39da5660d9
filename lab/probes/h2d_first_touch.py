"""Is a kernel's first call slower on contents just written into its input? Softmax over 4096 x 4096 float32 on
one buffer, device time between events with L2 flushed, after the buffer took new contents in several ways (a
device copy, a pageable or pinned host copy, a host copy then a rewrite on the device, a host copy through a device
temporary, a host or device copy followed by a read of the buffer, a host copy followed by calls on another
buffer). Each way 8 times with new contents; the first and the second call after each refill.

    python benchmarks/h2d_first_touch.py
"""

from __future__ import annotations

import statistics

import torch


def main() -> None:
    dev = torch.device("cuda")
    buf = torch.randn(4096, 4096, device=dev)
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=dev)

    other = torch.randn(4096, 4096, device=dev)

    def timed(x: torch.Tensor | None = None) -> float:
        flush.zero_()
        torch.cuda._sleep(20_000)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        torch.softmax(buf if x is None else x, dim=-1)
        b.record()
        torch.cuda.synchronize()
        return a.elapsed_time(b)

    for _ in range(20):
        timed()

    def device_copy(src: torch.Tensor) -> None:
        buf.copy_(src.to(dev))

    ways = {
        "device copy from a device tensor": lambda h: buf.copy_(torch.randn(4096, 4096, device=dev)),
        "host copy (pageable)": lambda h: buf.copy_(h),
        "host copy, then rewritten from a clone": lambda h: (buf.copy_(h), buf.copy_(buf.clone())),
        "host copy into a temporary, then device copy": device_copy,
        "host copy (pinned)": lambda h: buf.copy_(h.pin_memory()),
        "host copy, then read (sum)": lambda h: (buf.copy_(h), buf.sum()),
        "host copy, then read (copied out)": lambda h: (buf.copy_(h), torch.empty_like(buf).copy_(buf)),
        "device copy, then read (sum)": lambda h: (buf.copy_(torch.randn(4096, 4096, device=dev)), buf.sum()),
        "host copy, then a timed call on another buffer": lambda h: (buf.copy_(h), timed(other)),
        "host copy, then two timed calls on another buffer": lambda h: (buf.copy_(h), timed(other), timed(other)),
    }
    rows = []
    for name, refill in ways.items():
        first, second = [], []
        for _ in range(8):
            host = torch.randn(4096, 4096)
            refill(host)
            torch.cuda.synchronize()
            first.append(timed())
            second.append(timed())
        rows.append((name, statistics.median(first), max(first), statistics.median(second)))
    print("| refill | first call ms (median) | first call ms (max) | second call ms (median) |")
    print("|---|---|---|---|")
    for name, f, fmax, s in rows:
        print(f"| {name} | {f:.4f} | {fmax:.4f} | {s:.4f} |")


if __name__ == "__main__":
    main()
