"""Minor page faults per call, three patterns, 64 MB buffers: glibc's posix_memalign + memset + free (ctypes),
torch.empty + fill_ + del, and the RMSNorm reference at 4096 x 4096 (four 64 MB temporaries). Run it with and
without MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ (paging.sh).
"""

import ctypes
import resource

import torch


def faults(fn, n=8):
    out = []
    for _ in range(n):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        fn()
        out.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return out


libc = ctypes.CDLL(None)
libc.posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]


def glibc_buffer(n=64 << 20):
    p = ctypes.c_void_p()
    libc.posix_memalign(ctypes.byref(p), 64, n)
    ctypes.memset(p, 1, n)
    libc.free(p)


def torch_buffer():
    y = torch.empty(4096 * 4096)
    y.fill_(1.0)
    del y


x, r, w = torch.randn(4096, 4096), torch.randn(4096, 4096), torch.randn(4096)


def reference():
    z = x + r
    return z / torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * w


for name, fn in (("glibc posix_memalign", glibc_buffer), ("torch.empty", torch_buffer), ("reference", reference)):
    print(f"{name:22s} {faults(fn)}")
