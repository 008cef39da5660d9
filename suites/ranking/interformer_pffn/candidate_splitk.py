"""Triton candidate for interformer_pffn at few rows: the hidden dimension K split across programs, reduced in the
same launch by the last program of each row block (a split-K semaphore); the seed's kernel above SPLIT_MAX_ROWS.

Technique (ROWS <= SPLIT_MAX_ROWS, D <= 256): the grid is (row blocks) x (K splits). Program (m, s) takes BLOCK_M
rows of x (resident in registers) and the hidden blocks s, s + SPLIT_K, s + 2 SPLIT_K, ... of BLOCK_K columns
(SPLIT_K is cut to the number of blocks; it need not divide it). Per block, as in the seed: h = x @ W1[kblock]^T +
b1 (fp32 accumulation), the exact GELU g, sum(g^2) per row, and (g * w_n1) @ W2[:, kblock]^T into a [BLOCK_M, D]
fp32 partial. fc2(norm1(g)) = rstd1 * ((g * w_n1) @ W2^T) + b2 with rstd1 = rsqrt(mean(g^2 over all K) + eps), so
partials over disjoint K chunks add. Each program stores its partial and its per-row sum of squares to an fp32
workspace ([row block, split, BLOCK_M, BLOCK_D], padded: no masks), then, after a CTA barrier, one acq_rel
atomic_add on its row block's counter. The program that reads SPLIT_K - 1 is the last of its row block: it adds
the SPLIT_K partials in split order (deterministic whatever order the programs ran in), applies rstd1, + b2,
RMSNorm 2 over D times w_n2, stores fp16 y and puts the counter back to 0. The numerics are the seed's: h and g in
fp32, g * w_n1 rounded to fp16 for the second dot, everything after it in fp32.

The counter and the workspace are cached, one set per (device, stream): the counter is zeroed once when created
and every launch leaves it at 0 (each row block's last program resets its own), so a call costs one launch, not a
memset and a launch. A launch either completes, leaving every counter at 0, or faults on the device, which poisons
the CUDA context (the cached buffers die with it); a launch that raises on the host (the interpreter included)
drops the cached set, so the next call starts from fresh zeros. While a CUDA graph is being captured the buffers
are allocated per call (torch.zeros: the graph holds its own zeroed counter), never cached.

Expected bottleneck at 256 x 128 x 256: latency, not bytes or flops. With the defaults (BLOCK_M 16, BLOCK_K 64,
SPLIT_K cut to the 4 blocks of K) 16 row blocks x 4 splits = 64 programs in one wave. DRAM: x 64 KB, W1 and W2 128
KB, y 64 KB, far less time than a launch's own latency; the workspace and the re-reads of x and of each W1/W2 chunk
stay in L2; 34 MFLOP is nothing for the tensor cores. Per program the critical path is one DRAM round trip for x,
W1[chunk], W2[:, chunk] (all issued before the first dot, L2 flushed), two small dots and the erf, an 8 KB store, a
gpu-scope acq_rel atomic, and for the last program the partials' loads from L2 (one round trip: the loop over splits
is unrolled) and the norms. What shortened that chain over the first version: the unrolled reduction (SPLIT_K loads
in a row before), the counter reset as a plain store (an atomic's reply was waited for), and 8 warps rather than 4.
Measurements: docs/benchmarks/ranking.md.

Above SPLIT_MAX_ROWS rows, or D > 256, forward runs the seed's kernel (_pffn_rows_kernel, unchanged: one program
per ROWS_BLOCK_M rows walking all of K) with its own launch constants.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-6

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
SPLIT_MAX_ROWS = 1024  # the split-K path up to this many rows, the seed's path above
BLOCK_M = 16  # split-K path: rows per program (few, so that 256 rows still make 16 row blocks)
BLOCK_K = 64  # split-K path: hidden columns per step
SPLIT_K = 8  # split-K path: programs per row block (at most the number of BLOCK_K blocks of K)
NUM_WARPS = 8
NUM_STAGES = 1
ROWS_BLOCK_M = 64  # seed path: rows per program (fewer for wide D, see _rows)
ROWS_BLOCK_K = 32  # seed path: hidden columns per step
ROWS_NUM_WARPS = 8
ROWS_NUM_STAGES = 2

TUNABLES = {
    "SPLIT_MAX_ROWS": [0, 512, 1024, 2048, 4096],
    "BLOCK_M": [16, 32, 64],
    "BLOCK_K": [16, 32, 64],
    "SPLIT_K": [2, 4, 8, 16],
    "NUM_WARPS": [2, 4, 8],
    "NUM_STAGES": [1, 2],
    "ROWS_BLOCK_M": [16, 32, 64, 128],
    "ROWS_BLOCK_K": [16, 32, 64, 128],
    "ROWS_NUM_WARPS": [4, 8],
    "ROWS_NUM_STAGES": [1, 2, 3],
}

_MAX_DK = 256  # widest x slice held in registers: x stays resident for D <= 256 (the split path needs it)
_ACC_ELEMS = 16384  # cap on BLOCK_M * BLOCK_D, the fp32 output accumulator of a program
# Triton's interpreter (CPU), where programs are slow: at least this many rows per program (tests set 1 to keep
# the GPU blocks).
_INTERPRETER_BLOCK_M = 256
_INTERPRETER_ROWS = 512  # seed path: rows per program in the interpreter

# (device, stream) -> (shape key, workspace, sums of squares, counters); see _scratch.
_SCRATCH: dict[tuple, tuple] = {}
_MAX_SCRATCH = 8  # cached sets kept, oldest dropped first


@triton.jit
def _pffn_splitk_kernel(
    x_ptr,
    w1_ptr,
    b1_ptr,
    n1_ptr,
    w2_ptr,
    b2_ptr,
    n2_ptr,
    out_ptr,
    part_ptr,  # fp32 [row blocks, SPLIT_K, BLOCK_M, BLOCK_D]
    sq_ptr,  # fp32 [row blocks, SPLIT_K, BLOCK_M]
    count_ptr,  # int32 [row blocks], 0 between launches
    n_rows,
    eps,
    D: tl.constexpr,
    K: tl.constexpr,
    SPLIT_K: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    split = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_rows
    dcols = tl.arange(0, BLOCK_D)
    dcol_ok = dcols < D
    xa = tl.load(
        x_ptr + rows.to(tl.int64)[:, None] * D + dcols[None, :], mask=row_ok[:, None] & dcol_ok[None, :], other=0.0
    )

    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)  # this split's (g * w_n1) @ W2^T, before rstd1
    sum_sq = tl.zeros([BLOCK_M], dtype=tl.float32)  # this split's sum of g^2
    for kb in range(split, tl.cdiv(K, BLOCK_K), SPLIT_K):
        kk = kb * BLOCK_K + tl.arange(0, BLOCK_K)
        k_ok = kk < K
        # Every load of the step first, so their DRAM round trips overlap (L2 is cold on the first call).
        # W1 is [K, D], read transposed as [D, BLOCK_K]; W2 is [D, K], read transposed as [BLOCK_K, D].
        w1t = tl.load(w1_ptr + kk[None, :] * D + dcols[:, None], mask=dcol_ok[:, None] & k_ok[None, :], other=0.0)
        w2t = tl.load(w2_ptr + dcols[None, :] * K + kk[:, None], mask=k_ok[:, None] & dcol_ok[None, :], other=0.0)
        b1 = tl.load(b1_ptr + kk, mask=k_ok, other=0.0).to(tl.float32)
        n1 = tl.load(n1_ptr + kk, mask=k_ok, other=0.0).to(tl.float32)
        h = tl.dot(xa, w1t) + b1[None, :]
        g = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))  # exact GELU; 0 in masked columns
        sum_sq += tl.sum(g * g, axis=1)
        acc += tl.dot((g * n1[None, :]).to(w2t.dtype), w2t)

    # Publish this split's partial. The workspace is padded to whole blocks: no masks.
    mrows = tl.arange(0, BLOCK_M)
    blk = pid_m.to(tl.int64) * SPLIT_K
    tl.store(part_ptr + ((blk + split) * BLOCK_M + mrows)[:, None] * BLOCK_D + dcols[None, :], acc)
    tl.store(sq_ptr + (blk + split) * BLOCK_M + mrows, sum_sq)
    # The atomic is one thread's: the barrier orders every thread's stores above before it, and its release
    # semantics (acq_rel, gpu scope) make them visible to whichever program acquires the counter after it. The
    # acquire half orders the last program's loads below after the other programs' releases.
    tl.debug_barrier()
    count = tl.atomic_add(count_ptr + pid_m, 1, sem="acq_rel")
    if count == SPLIT_K - 1:
        total = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
        total_sq = tl.zeros([BLOCK_M], dtype=tl.float32)
        # Unrolled: every partial's load is issued at once (one L2 round trip, not SPLIT_K in a row). Split
        # order, whichever program is last: deterministic.
        for j in tl.static_range(SPLIT_K):
            # .cg: from L2, never a stale L1 line (the workspace is reused across calls)
            total += tl.load(
                part_ptr + ((blk + j) * BLOCK_M + mrows)[:, None] * BLOCK_D + dcols[None, :], cache_modifier=".cg"
            )
            total_sq += tl.load(sq_ptr + (blk + j) * BLOCK_M + mrows, cache_modifier=".cg")
        rstd1 = 1.0 / tl.sqrt(total_sq / K + eps)
        h2 = total * rstd1[:, None] + tl.load(b2_ptr + dcols, mask=dcol_ok, other=0.0).to(tl.float32)[None, :]
        rstd2 = 1.0 / tl.sqrt(tl.sum(h2 * h2, axis=1) / D + eps)  # padded columns of h2 are 0
        y = h2 * rstd2[:, None] * tl.load(n2_ptr + dcols, mask=dcol_ok, other=0.0).to(tl.float32)[None, :]
        tl.store(
            out_ptr + rows.to(tl.int64)[:, None] * D + dcols[None, :],
            y.to(out_ptr.dtype.element_ty),
            mask=row_ok[:, None] & dcol_ok[None, :],
        )
        # Ready for the next launch: a plain store (the kernel boundary orders it; nothing else touches this
        # counter in this launch), not an atomic whose reply the program would wait for before it exits.
        tl.store(count_ptr + pid_m, 0)


@triton.jit
def _pffn_rows_kernel(
    x_ptr,
    w1_ptr,
    b1_ptr,
    n1_ptr,
    w2_ptr,
    b2_ptr,
    n2_ptr,
    out_ptr,
    n_rows,
    d,
    k,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DK: tl.constexpr,
    BLOCK_K: tl.constexpr,
    X_RESIDENT: tl.constexpr,
):
    """The seed's kernel (seed_triton.py), unchanged: one program per BLOCK_M rows, all of K in BLOCK_K steps."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_rows
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * d
    dcols = tl.arange(0, BLOCK_D)
    dcol_ok = dcols < d
    dk = tl.arange(0, BLOCK_DK)
    if X_RESIDENT:
        xa = tl.load(x_rows + dk[None, :], mask=row_ok[:, None] & (dk < d)[None, :], other=0.0)

    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)  # (g * w_n1) @ W2^T, before rstd1
    sum_sq = tl.zeros([BLOCK_M], dtype=tl.float32)  # sum over K of g^2
    for k0 in range(0, k, BLOCK_K):
        kk = k0 + tl.arange(0, BLOCK_K)
        k_ok = kk < k
        # h = x @ W1[kk]^T  (W1 is [K, D], read transposed as [D, BLOCK_K])
        if X_RESIDENT:
            w1t = tl.load(w1_ptr + kk[None, :] * d + dk[:, None], mask=(dk < d)[:, None] & k_ok[None, :], other=0.0)
            h = tl.dot(xa, w1t)
        else:
            h = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
            for d0 in range(0, d, BLOCK_DK):
                dd = d0 + dk
                xs = tl.load(x_rows + dd[None, :], mask=row_ok[:, None] & (dd < d)[None, :], other=0.0)
                w1t = tl.load(w1_ptr + kk[None, :] * d + dd[:, None], mask=(dd < d)[:, None] & k_ok[None, :], other=0.0)
                h += tl.dot(xs, w1t)
        h += tl.load(b1_ptr + kk, mask=k_ok, other=0.0).to(tl.float32)[None, :]
        g = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))  # exact GELU; 0 in masked columns
        sum_sq += tl.sum(g * g, axis=1)
        gw = g * tl.load(n1_ptr + kk, mask=k_ok, other=0.0).to(tl.float32)[None, :]
        # acc += (g * w_n1) @ W2[:, kk]^T  (W2 is [D, K], read transposed as [BLOCK_K, D])
        w2t = tl.load(w2_ptr + dcols[None, :] * k + kk[:, None], mask=k_ok[:, None] & dcol_ok[None, :], other=0.0)
        acc += tl.dot(gw.to(w2t.dtype), w2t)

    rstd1 = 1.0 / tl.sqrt(sum_sq / k + eps)
    h2 = acc * rstd1[:, None] + tl.load(b2_ptr + dcols, mask=dcol_ok, other=0.0).to(tl.float32)[None, :]
    rstd2 = 1.0 / tl.sqrt(tl.sum(h2 * h2, axis=1) / d + eps)  # padded columns of h2 are 0
    y = h2 * rstd2[:, None] * tl.load(n2_ptr + dcols, mask=dcol_ok, other=0.0).to(tl.float32)[None, :]
    tl.store(
        out_ptr + rows.to(tl.int64)[:, None] * d + dcols[None, :],
        y.to(out_ptr.dtype.element_ty),
        mask=row_ok[:, None] & dcol_ok[None, :],
    )


def _scratch(device: torch.device, n_blocks: int, split: int, block_m: int, block_d: int):
    """(key, partials, sums of squares, counters) for one launch of the split-K kernel.

    Cached per (device, stream), the last shape only, at most _MAX_SCRATCH sets: consecutive calls on one stream
    are ordered, so they may share the workspace, and every completed launch leaves the counters at 0; calls on
    two streams never share a counter. Not cached while a CUDA graph is captured (buffers allocated then belong to
    the graph, and its zero fill only runs on replay)."""
    capturing = device.type == "cuda" and torch.cuda.is_current_stream_capturing()
    shape = (n_blocks, split, block_m, block_d)
    if not capturing:
        stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
        key = (str(device), stream)
        entry = _SCRATCH.get(key)
        if entry is not None and entry[0] == shape:
            return key, entry[1], entry[2], entry[3]
    part = torch.empty((n_blocks, split, block_m, block_d), dtype=torch.float32, device=device)
    sq = torch.empty((n_blocks, split, block_m), dtype=torch.float32, device=device)
    count = torch.zeros((n_blocks,), dtype=torch.int32, device=device)
    if capturing:
        return None, part, sq, count
    _SCRATCH.pop(key, None)
    while len(_SCRATCH) >= _MAX_SCRATCH:  # streams come and go (the harness makes one per graph capture)
        _SCRATCH.pop(next(iter(_SCRATCH)))  # freed on the stream that allocated it: stream-ordered reuse
    _SCRATCH[key] = (shape, part, sq, count)
    return key, part, sq, count


def _c(t: torch.Tensor) -> torch.Tensor:
    return t if t.is_contiguous() else t.contiguous()


class ModelNew(nn.Module):
    def __init__(self, d: int, k: int, eps: float = EPS):
        super().__init__()
        self.eps = eps
        # Parameter holders only, named as in the reference so the harness's state_dict copy fills them.
        self.fc1 = nn.Linear(d, k)
        self.norm1 = nn.RMSNorm(k, eps=eps)
        self.fc2 = nn.Linear(k, d)
        self.norm2 = nn.RMSNorm(d, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _c(x)
        n_rows, d = x.shape
        k = self.fc1.weight.shape[0]
        out = torch.empty_like(x)
        if n_rows == 0:
            return out
        # Kernels read the parameters' storage: no autograd here (as the seed's .detach()).
        params = (
            _c(self.fc1.weight),
            _c(self.fc1.bias),
            _c(self.norm1.weight),
            _c(self.fc2.weight),
            _c(self.fc2.bias),
            _c(self.norm2.weight),
        )
        block_d = max(16, triton.next_power_of_2(d))
        if n_rows <= SPLIT_MAX_ROWS and d <= _MAX_DK:
            self._split_k(x, params, out, n_rows, d, k, block_d)
        else:
            self._rows(x, params, out, n_rows, d, k, block_d)
        return out

    def _split_k(self, x, params, out, n_rows, d, k, block_d):
        block_m = max(16, min(BLOCK_M, _ACC_ELEMS // block_d, triton.next_power_of_2(n_rows)))
        if not x.is_cuda:
            block_m = max(block_m, min(triton.next_power_of_2(n_rows), _INTERPRETER_BLOCK_M))
        block_k = max(16, BLOCK_K)
        split = max(1, min(SPLIT_K, triton.cdiv(k, block_k)))
        n_blocks = triton.cdiv(n_rows, block_m)
        key, part, sq, count = _scratch(x.device, n_blocks, split, block_m, block_d)
        try:
            _pffn_splitk_kernel[(n_blocks, split)](
                x,
                *params,
                out,
                part,
                sq,
                count,
                n_rows,
                float(self.eps),
                D=d,
                K=k,
                SPLIT_K=split,
                BLOCK_M=block_m,
                BLOCK_D=block_d,
                BLOCK_K=block_k,
                num_warps=NUM_WARPS,
                num_stages=NUM_STAGES,
            )
        except BaseException:
            if key is not None:  # a launch cut short may leave counters set: start the next call from zeros
                _SCRATCH.pop(key, None)
            raise

    def _rows(self, x, params, out, n_rows, d, k, block_d):
        block_dk = min(block_d, _MAX_DK)
        block_m = max(16, min(ROWS_BLOCK_M, _ACC_ELEMS // block_d))
        if not x.is_cuda:
            block_m = max(block_m, min(triton.next_power_of_2(n_rows), _INTERPRETER_ROWS))
        _pffn_rows_kernel[(triton.cdiv(n_rows, block_m),)](
            x,
            *params,
            out,
            n_rows,
            d,
            k,
            float(self.eps),
            BLOCK_M=block_m,
            BLOCK_D=block_d,
            BLOCK_DK=block_dk,
            BLOCK_K=max(16, ROWS_BLOCK_K),
            X_RESIDENT=block_dk >= d,
            num_warps=ROWS_NUM_WARPS,
            num_stages=ROWS_NUM_STAGES,
        )
