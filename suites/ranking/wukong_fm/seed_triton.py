"""Triton seed for wukong_fm: persistent programs over (batch element, column block) items, X^T Y on chip.

Technique: out = X @ (X^T @ Y) per batch element is computed transposed, the way flash attention computes P @ V. For
a block of BLOCK_K columns of Y, T^T = Y^T X is one dot (M = BLOCK_K, reduction over N) accumulated in fp32 and
rounded to fp16 in registers (the reference's intermediate); out^T = T^T X^T is a second dot that takes T^T from
registers (on Hopper a wgmma with its A operand in registers: T never goes through shared memory). Both dots have M
= BLOCK_K = 128, so both run on wgmma even at N = 24 (the previous seed's X @ T had M = N: mma.sync). X[b] is loaded
once per item into shared memory and feeds both dots (the second through a transposed view). A work item is (batch
element, column block); a persistent grid (SMs x the programs that fit on one SM, at most PROGRAMS_PER_SM; read from
the compiled kernel's registers and shared memory, so there is no second, partial wave) strides over the items in
one software-pipelined loop (tl.range, NUM_STAGES): the next items' Y and X tiles load by cp.async while the current
one computes, in one launch with no tail of tiny programs. The shape (N, D, K) is constexpr: one compile per shape,
constant strides and trip counts, masks only on blocks that can be partial. Padding is cut rather than every
dimension rounded up to a power of two: the N rows are a power-of-two block plus a remainder block when that pads
less (N = 40: 32 + 16 rows, not 64), and D goes in chunks of the largest power of two dividing it, at most
MAX_BLOCK_D (D = 96: three chunks of 32, not 128), each chunk's T^T consumed at once (out^T += T_j^T X_j^T; the fp16
rounding is elementwise, so chunking D leaves the numerics as they were). N > 128 (the out-of-distribution case)
takes a second kernel: the previous seed's scheme (program = column block x batch element, two loops over N) with
pipelined loops and narrower column blocks for more programs (N = 1024, K = 128: 128 programs, the previous seed's
32).

Expected bottleneck: DRAM bandwidth. An item moves Y's and out's [N, BLOCK_K] tiles (padded rows are masked, not
fetched) plus X[b] (from L2 after its first column block). At (2048, 24, 64, 256): 56.6 MB (Y 25.2, out 25.2, X
6.3) against 4.3 GFLOP on the tensor cores (N padded to 32), about 76 FLOP per byte, well below Hopper's ridge
(about 200 at the dense fp16 peak), so the dots hide behind the loads if the pipelining works; 4096 items over
132 x 4 = 528 programs (7-8 items each, one launch; 4 x 9 KB of loads per SM per pipeline stage). At (1000, 40,
96, 600): 104 MB against 11.8 GFLOP after the reduced padding (the old seed's padding to 64 x 128 costs 21 GFLOP):
memory-bound by a smaller margin. At (512, 64, 128, 2304) the 38.7 GFLOP over 310 MB need the wgmmas to overlap
the loads across the few programs that fit per SM. Compiled for sm_90 (Triton's ptxas, on a CPU host), every dot
is a wgmma, the loads are cp.async-pipelined, and nothing spills. It replaced a kernel of one program per (batch
element, column block): X @ T on mma.sync at small N, and no loads of the next item overlapping the current one's
dots. Measurements: docs/benchmarks/ranking.md; registers and shared memory per shape: docs/benchmarks/README.md.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
BLOCK_K = 128  # columns per item: the M of both dots (wgmma needs M >= 64 for 4 warps)
MAX_BLOCK_D = 64  # D chunk: the largest power of two dividing D, at most this
PROGRAMS_PER_SM = 4  # persistent grid: programs per SM
NUM_WARPS = 4
NUM_STAGES = 3
TALL_BLOCK_N = 64  # N > 128: rows per step of the tall kernel's loops
TALL_BLOCK_K = 32  # N > 128: columns per program of the tall kernel

TUNABLES = {
    "BLOCK_K": [64, 128, 256],
    "MAX_BLOCK_D": [16, 32, 64, 128],
    "PROGRAMS_PER_SM": [1, 2, 3, 4, 6, 8],
    "NUM_WARPS": [4, 8],
    "NUM_STAGES": [1, 2, 3, 4],
    "TALL_BLOCK_N": [32, 64, 128],
    "TALL_BLOCK_K": [32, 64, 128],
}

# The resident kernel holds all N rows of an item at once up to this N; above it the tall kernel loops over N.
_MAX_RESIDENT_N = 128

# Triton's interpreter (CPU): fewer, larger programs, each still looping over several items.
_INTERPRETER_BLOCK_K = 512
_INTERPRETER_PROGRAMS = 2

# (device, dtype, launch parameters, constants) -> (SMs, programs that fit on one SM).
_PER_SM: dict[tuple, tuple[int, int]] = {}


@triton.jit
def _load_tile(ptrs, row_ok, col_ok, MASK_ROWS: tl.constexpr, MASK_COLS: tl.constexpr):
    """Load a 2-D tile, masking (other = 0) only the axes that can be partial."""
    if MASK_ROWS and MASK_COLS:
        return tl.load(ptrs, mask=row_ok[:, None] & col_ok[None, :], other=0.0)
    elif MASK_ROWS:
        return tl.load(ptrs, mask=row_ok[:, None], other=0.0)
    elif MASK_COLS:
        return tl.load(ptrs, mask=col_ok[None, :], other=0.0)
    else:
        return tl.load(ptrs)


@triton.jit
def _store_tile_t(ptrs, val, col_ok, row_ok, MASK_COLS: tl.constexpr, MASK_ROWS: tl.constexpr):
    """Store a transposed [cols, rows] tile, masking only the axes that can be partial."""
    if MASK_COLS and MASK_ROWS:
        tl.store(ptrs, val, mask=col_ok[:, None] & row_ok[None, :])
    elif MASK_COLS:
        tl.store(ptrs, val, mask=col_ok[:, None])
    elif MASK_ROWS:
        tl.store(ptrs, val, mask=row_ok[None, :])
    else:
        tl.store(ptrs, val)


@triton.jit
def _wukong_fm_resident_kernel(
    x_ptr,
    y_ptr,
    out_ptr,
    batch,
    N: tl.constexpr,
    D: tl.constexpr,
    K: tl.constexpr,
    N_A: tl.constexpr,  # rows 0 .. N_A: a power of two, >= 16
    N_B: tl.constexpr,  # rows N_A .. N (< N_A + N_B): a second block, 0 when there is none
    BLOCK_D: tl.constexpr,
    BLOCK_K: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    K_BLOCKS: tl.constexpr = (K + BLOCK_K - 1) // BLOCK_K
    D_BLOCKS: tl.constexpr = (D + BLOCK_D - 1) // BLOCK_D
    MASK_K: tl.constexpr = K % BLOCK_K != 0
    MASK_D: tl.constexpr = D % BLOCK_D != 0
    MASK_A: tl.constexpr = N < N_A  # block A has padded rows (only when there is no block B)
    HAS_B: tl.constexpr = N_B > 0

    rows_a = tl.arange(0, N_A)
    rows_a_ok = rows_a < N
    if HAS_B:
        rows_b = N_A + tl.arange(0, N_B)
        rows_b_ok = rows_b < N
    cols0 = tl.arange(0, BLOCK_K)
    dims0 = tl.arange(0, BLOCK_D)

    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    total = batch * K_BLOCKS
    # Items pid, pid + programs, ...: neighbouring programs take a batch element's column blocks together.
    for i in tl.range(0, tl.cdiv(total - pid, programs), num_stages=NUM_STAGES):
        item = pid + i * programs
        b = (item // K_BLOCKS).to(tl.int64)
        cols = (item % K_BLOCKS) * BLOCK_K + cols0
        cols_ok = cols < K
        x_b = x_ptr + b * (N * D)  # 64-bit scalar bases, 32-bit offsets within one batch element
        y_b = y_ptr + b * (N * K)
        out_b = out_ptr + b * (N * K)

        # Y[b] rows x this item's columns: [N_A, BLOCK_K] (and [N_B, BLOCK_K]).
        y_a = _load_tile(y_b + rows_a[:, None] * K + cols[None, :], rows_a_ok, cols_ok, MASK_A, MASK_K)
        if HAS_B:
            y_bb = _load_tile(y_b + rows_b[:, None] * K + cols[None, :], rows_b_ok, cols_ok, True, MASK_K)
        acc_a = tl.zeros([BLOCK_K, N_A], dtype=tl.float32)  # out^T, fp32 accumulation over the D chunks
        if HAS_B:
            acc_b = tl.zeros([BLOCK_K, N_B], dtype=tl.float32)

        for j in tl.static_range(D_BLOCKS):
            dims = j * BLOCK_D + dims0
            dims_ok = dims < D
            x_a = _load_tile(x_b + rows_a[:, None] * D + dims[None, :], rows_a_ok, dims_ok, MASK_A, MASK_D)
            # T_j^T = (X^T Y)^T for D chunk j: [BLOCK_K, BLOCK_D], fp32 over N, then rounded to fp16 as the
            # reference's intermediate tensor is. Padded rows of X and Y are zero and add nothing.
            t = tl.dot(tl.trans(y_a), x_a)
            if HAS_B:
                x_bb = _load_tile(x_b + rows_b[:, None] * D + dims[None, :], rows_b_ok, dims_ok, True, MASK_D)
                t = tl.dot(tl.trans(y_bb), x_bb, t)
            t_half = t.to(x_ptr.dtype.element_ty)
            # out^T += T_j^T X_j^T: the A operand comes from registers.
            acc_a = tl.dot(t_half, tl.trans(x_a), acc_a)
            if HAS_B:
                acc_b = tl.dot(t_half, tl.trans(x_bb), acc_b)

        # out[b, rows, cols] from out^T tiles: contiguous along the columns.
        _store_tile_t(
            out_b + rows_a[None, :] * K + cols[:, None],
            acc_a.to(out_ptr.dtype.element_ty),
            cols_ok,
            rows_a_ok,
            MASK_K,
            MASK_A,
        )
        if HAS_B:
            _store_tile_t(
                out_b + rows_b[None, :] * K + cols[:, None],
                acc_b.to(out_ptr.dtype.element_ty),
                cols_ok,
                rows_b_ok,
                MASK_K,
                True,
            )


@triton.jit
def _wukong_fm_tall_kernel(
    x_ptr,
    y_ptr,
    out_ptr,
    N: tl.constexpr,
    D: tl.constexpr,
    K: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_K: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    # Program (column block, batch element), column blocks fastest so X[b] is shared in L2.
    K_BLOCKS: tl.constexpr = (K + BLOCK_K - 1) // BLOCK_K
    MASK_N: tl.constexpr = N % BLOCK_N != 0
    MASK_D: tl.constexpr = D != BLOCK_D
    MASK_K: tl.constexpr = K % BLOCK_K != 0
    pid = tl.program_id(0)
    b = (pid // K_BLOCKS).to(tl.int64)
    cols = (pid % K_BLOCKS) * BLOCK_K + tl.arange(0, BLOCK_K)
    cols_ok = cols < K
    dims = tl.arange(0, BLOCK_D)
    dims_ok = dims < D
    x_b = x_ptr + b * (N * D)
    y_b = y_ptr + b * (N * K)
    out_b = out_ptr + b * (N * K)

    # T = X^T Y[:, cols]: [BLOCK_D, BLOCK_K], fp32 over N.
    t = tl.zeros([BLOCK_D, BLOCK_K], dtype=tl.float32)
    for n0 in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
        rows = n0 + tl.arange(0, BLOCK_N)
        rows_ok = rows < N
        x = _load_tile(x_b + rows[:, None] * D + dims[None, :], rows_ok, dims_ok, MASK_N, MASK_D)
        y = _load_tile(y_b + rows[:, None] * K + cols[None, :], rows_ok, cols_ok, MASK_N, MASK_K)
        t = tl.dot(tl.trans(x), y, t)
    t_half = t.to(x_ptr.dtype.element_ty)

    # out[:, cols] = X T.
    for n0 in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
        rows = n0 + tl.arange(0, BLOCK_N)
        rows_ok = rows < N
        x = _load_tile(x_b + rows[:, None] * D + dims[None, :], rows_ok, dims_ok, MASK_N, MASK_D)
        o = tl.dot(x, t_half)
        ptrs = out_b + rows[:, None] * K + cols[None, :]
        if MASK_N and MASK_K:
            tl.store(ptrs, o.to(out_ptr.dtype.element_ty), mask=rows_ok[:, None] & cols_ok[None, :])
        elif MASK_N:
            tl.store(ptrs, o.to(out_ptr.dtype.element_ty), mask=rows_ok[:, None])
        elif MASK_K:
            tl.store(ptrs, o.to(out_ptr.dtype.element_ty), mask=cols_ok[None, :])
        else:
            tl.store(ptrs, o.to(out_ptr.dtype.element_ty))


def _row_blocks(n: int) -> tuple[int, int]:
    """N rows as a power-of-two block (>= 16) plus a remainder block (0: none), whichever pads less."""
    whole = max(16, triton.next_power_of_2(n))
    if n <= 16:
        return whole, 0
    n_a = 1 << (n.bit_length() - 1)  # the largest power of two <= n
    n_b = max(16, triton.next_power_of_2(n - n_a)) if n > n_a else 0
    if n_b == 0 or whole <= n_a + n_b:
        return whole, 0
    return n_a, n_b


def _d_block(d: int) -> int:
    """The D chunk: the largest power of two dividing D (no padding), at most MAX_BLOCK_D, at least 16."""
    largest = d & -d
    if largest < 16:  # D not a multiple of 16: one padded chunk, or several and a masked last one
        return max(16, min(MAX_BLOCK_D, triton.next_power_of_2(d)))
    return max(16, min(MAX_BLOCK_D, largest))


def _programs_per_sm(compiled, device: torch.device) -> int:
    """Programs of a compiled kernel that fit on one SM at once (registers, shared memory, threads)."""
    props = torch.cuda.get_device_properties(device)
    regs = getattr(props, "regs_per_multiprocessor", 65536)
    smem = getattr(props, "shared_memory_per_multiprocessor", 233472)
    threads = getattr(props, "max_threads_per_multi_processor", 2048)
    compiled._init_handles()
    warps = compiled.metadata.num_warps
    by_regs = regs // (max(8, -(-compiled.n_regs // 8) * 8) * 32 * warps)  # registers go by 8 per thread
    by_smem = smem // (compiled.metadata.shared + 2048)  # + the static and the per-block reserved 1 KB each
    return max(1, min(by_regs, by_smem, threads // (32 * warps), 32))


def _resident_programs(args: tuple, constants: dict, device: torch.device, items: int) -> int:
    """The persistent grid: SMs x programs per SM, at most PROGRAMS_PER_SM and never more than fit at once (a
    second, partial wave of persistent programs would run its items at a fraction of the occupancy)."""
    if device.type != "cuda":
        return max(1, min(items, _INTERPRETER_PROGRAMS))
    index = device.index if device.index is not None else torch.cuda.current_device()
    key = (index, args[0].dtype, NUM_WARPS, NUM_STAGES, *sorted(constants.items()))
    if key not in _PER_SM:
        try:
            compiled = _wukong_fm_resident_kernel.warmup(
                *args, **constants, num_warps=NUM_WARPS, num_stages=NUM_STAGES, grid=(1,)
            )
            fit = _programs_per_sm(compiled, torch.device("cuda", index))
        except (AttributeError, TypeError):  # an older or newer Triton's warm-up or kernel fields: trust the cap
            fit = PROGRAMS_PER_SM
        _PER_SM[key] = (torch.cuda.get_device_properties(index).multi_processor_count, fit)
    sms, fit = _PER_SM[key]
    return max(1, min(items, sms * min(PROGRAMS_PER_SM, fit)))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x, y = x.contiguous(), y.contiguous()
        batch, n, d = x.shape
        k = y.shape[2]
        out = torch.empty((batch, n, k), dtype=x.dtype, device=x.device)
        if out.numel() == 0:
            return out
        if d == 0:
            return out.zero_()
        assert n * max(d, k) < 2**31, "offsets within one batch element are 32-bit"

        if n <= _MAX_RESIDENT_N:
            n_a, n_b = _row_blocks(n)
            block_k = max(16, min(BLOCK_K, triton.next_power_of_2(k)))
            if not x.is_cuda:
                block_k = max(block_k, min(_INTERPRETER_BLOCK_K, triton.next_power_of_2(k)))
            items = batch * triton.cdiv(k, block_k)
            args = (x, y, out, batch)
            constants = dict(N=n, D=d, K=k, N_A=n_a, N_B=n_b, BLOCK_D=_d_block(d), BLOCK_K=block_k)
            constants["NUM_STAGES"] = NUM_STAGES
            _wukong_fm_resident_kernel[(_resident_programs(args, constants, x.device, items),)](
                *args, **constants, num_warps=NUM_WARPS, num_stages=NUM_STAGES
            )
            return out

        block_k = max(16, min(TALL_BLOCK_K, triton.next_power_of_2(k)))
        block_n = max(16, TALL_BLOCK_N)
        if not x.is_cuda:
            block_k = max(block_k, min(_INTERPRETER_BLOCK_K, triton.next_power_of_2(k)))
            block_n = max(block_n, min(_INTERPRETER_BLOCK_K, triton.next_power_of_2(n)))
        _wukong_fm_tall_kernel[(triton.cdiv(k, block_k) * batch,)](
            x,
            y,
            out,
            N=n,
            D=d,
            K=k,
            BLOCK_N=block_n,
            BLOCK_D=max(16, triton.next_power_of_2(d)),
            BLOCK_K=block_k,
            NUM_STAGES=NUM_STAGES,
            num_warps=NUM_WARPS,
            num_stages=NUM_STAGES,
        )
        return out
