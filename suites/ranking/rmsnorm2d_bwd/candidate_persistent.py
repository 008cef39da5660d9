"""A persistent candidate for rmsnorm2d_bwd: a fixed number of programs per SM, the next row block's loads issued
before the current one's arithmetic, and a column-parallel dw reduction.

Why: the seed takes about the same time at every case that moves 8.4M elements, whatever its shape, well above the
bytes' floor, and not much less at 20000 x 96 (a fifth of the bytes). That flatness points at latency, not
bandwidth: each of the seed's programs walks its 8 row blocks one after another (load, two row reductions, store,
then the next load), and its one-program dw reduction walks every partial row serially (512 at the primary case, 16
dependent steps). Raising the seed's parallelism (fewer rows per program) multiplies the partial rows that one
program must then sum, so the tune search cannot trade one for the other.

Technique: grid = min(row blocks, SMs x PROGRAMS_PER_SM); program p takes row blocks p, p + grid, ... and carries
the next block's x and dy in registers across the loop (loaded before the current block's reductions), so two
blocks' loads are in flight per program. dw partials: one row per program (n_parts = grid, independent of ROWS).
The reduction kernel gives each program BLOCK_C columns and loads all n_parts partial rows of them at once (up to
MAX_BLOCK_P per step), then sums them in a fixed order (no atomics: deterministic on a given GPU). x and dy read
once, dx written once.

An earlier reduction (BLOCK_P = 64 partial rows per step over BLOCK_C = 32 columns) ran on 8 programs at the
primary case, each walking every partial row in 7 dependent steps: a serial tail after the main kernel. Hence the
present one: 32 programs at 256 columns, one step each.

Registers set how many programs fit on an SM. At the primary blocks (8 x 256, 4 warps) fewer fit than the seed's,
but each has two row blocks in flight; the loop carries the row indices, not 64-bit offset tiles, which would take
two registers per element. In the compiled loop the next tile's loads issue between the first row reduction's
shuffles and the rsqrt, ahead of the stores. The grid never exceeds the programs that fit (read from the compiled
kernel). Correct in Triton's interpreter (tests/test_rmsnorm_bwd_persistent.py), at the GPU launch blocks too.
Measurements, and register counts per compiler version: docs/benchmarks/ranking.md, docs/benchmarks/README.md.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EPS = 1e-6

# Launch parameters; a tuner re-binds these module constants (values from TUNABLES).
TILE = 2048  # elements per row block: BLOCK_ROWS = max(1, TILE // BLOCK_N)
PROGRAMS_PER_SM = 4
NUM_WARPS = 4  # at least; rows wider than 512 * NUM_WARPS elements get more (up to 16)
MAX_BLOCK_P = 512  # partial rows the dw reduction loads at once (all of them, up to this many)
BLOCK_C = 8  # columns per program of the dw reduction

TUNABLES = {
    "TILE": [1024, 2048, 4096, 8192],
    "PROGRAMS_PER_SM": [1, 2, 4, 8],
    "NUM_WARPS": [2, 4, 8, 16],
    "MAX_BLOCK_P": [128, 256, 512, 1024],
    "BLOCK_C": [4, 8, 16, 32],
}

# Triton's interpreter (CPU) has no SMs: this many programs, and row blocks of up to this many elements.
_INTERPRETER_PROGRAMS = 3
_INTERPRETER_TILE = 1 << 16

_FIT: dict[tuple, tuple[int, int]] = {}  # (device, dtype, warps, blocks) -> (SMs, programs that fit on one SM)


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


def _programs(args: tuple, constants: dict, num_warps: int, device: torch.device, n_blocks: int) -> int:
    """The persistent grid: SMs x programs per SM, at most PROGRAMS_PER_SM and never more than fit at once (the
    programs past that would run as a second wave, after the first ones finish their whole share)."""
    if device.type != "cuda":
        return max(1, min(n_blocks, _INTERPRETER_PROGRAMS))
    index = device.index if device.index is not None else torch.cuda.current_device()
    key = (index, args[0].dtype, num_warps, *sorted(constants.items()))
    if key not in _FIT:
        try:
            compiled = _rmsnorm_bwd_persistent_kernel.warmup(*args, **constants, num_warps=num_warps, grid=(1,))
            fit = _programs_per_sm(compiled, torch.device("cuda", index))
        except (AttributeError, TypeError):  # an older or newer Triton's warm-up or kernel fields: trust the cap
            fit = PROGRAMS_PER_SM
        _FIT[key] = (torch.cuda.get_device_properties(index).multi_processor_count, fit)
    sms, fit = _FIT[key]
    return max(1, min(n_blocks, sms * min(max(1, PROGRAMS_PER_SM), fit)))


@triton.jit
def _load_rows(ptr, rows, cols, col_ok, n_rows, n_cols):
    """A [BLOCK_ROWS, BLOCK_N] tile of whole rows in fp32, zeros past the last row and the last column."""
    mask = (rows < n_rows)[:, None] & col_ok[None, :]
    return tl.load(ptr + rows.to(tl.int64)[:, None] * n_cols + cols[None, :], mask=mask, other=0.0).to(tl.float32)


@triton.jit
def _rmsnorm_bwd_persistent_kernel(
    x_ptr,
    w_ptr,
    dy_ptr,
    dx_ptr,
    part_ptr,
    n_rows,
    n_cols,
    eps,
    n_blocks,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_ROWS, BLOCK_N], dtype=tl.float32)

    # Only the row indices and the two tiles cross the loop (offsets and masks are recomputed from the rows: a
    # [BLOCK_ROWS, BLOCK_N] tensor of 64-bit offsets carried across would take two registers per element).
    rows = pid * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    x = _load_rows(x_ptr, rows, cols, col_ok, n_rows, n_cols)
    dy = _load_rows(dy_ptr, rows, cols, col_ok, n_rows, n_cols)
    for _ in range(pid, n_blocks, n_programs):
        # The next row block's loads go out before this block's reductions (all masked off past the last row).
        rows_next = rows + n_programs * BLOCK_ROWS
        x_next = _load_rows(x_ptr, rows_next, cols, col_ok, n_rows, n_cols)
        dy_next = _load_rows(dy_ptr, rows_next, cols, col_ok, n_rows, n_cols)

        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
        xhat = x * rstd[:, None]
        wdy = w[None, :] * dy
        c = tl.sum(wdy * xhat, axis=1) / n_cols
        dx = (wdy - xhat * c[:, None]) * rstd[:, None]
        mask = (rows < n_rows)[:, None] & col_ok[None, :]
        tl.store(
            dx_ptr + rows.to(tl.int64)[:, None] * n_cols + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask
        )
        dw += dy * xhat  # masked rows hold x = dy = 0: they add nothing

        rows, x, dy = rows_next, x_next, dy_next
    tl.store(part_ptr + pid.to(tl.int64) * n_cols + cols, tl.sum(dw, axis=0), mask=col_ok)


@triton.jit
def _sum_partials_kernel(part_ptr, dw_ptr, n_parts, n_cols, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_ok = cols < n_cols
    acc = tl.zeros([BLOCK_P, BLOCK_C], dtype=tl.float32)
    for p0 in range(0, n_parts, BLOCK_P):
        parts = p0 + tl.arange(0, BLOCK_P)
        mask = (parts < n_parts)[:, None] & col_ok[None, :]
        acc += tl.load(part_ptr + parts.to(tl.int64)[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(acc, axis=0).to(dw_ptr.dtype.element_ty), mask=col_ok)


class ModelNew(nn.Module):
    def __init__(self, eps: float = EPS):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor):
        x, w, dy = x.contiguous(), w.contiguous(), dy.contiguous()
        n_rows, n_cols = x.shape
        dx = torch.empty_like(x)
        dw = torch.empty_like(w)
        if n_cols == 0:
            return dx, dw
        if n_rows == 0:
            return dx, dw.zero_()
        block_n = triton.next_power_of_2(n_cols)
        tile = TILE if x.is_cuda else max(TILE, _INTERPRETER_TILE)
        block_rows = max(1, min(tile // block_n, triton.next_power_of_2(n_rows)))
        n_blocks = triton.cdiv(n_rows, block_rows)
        num_warps = max(NUM_WARPS, min(16, block_n // 512))
        constants = dict(BLOCK_ROWS=block_rows, BLOCK_N=block_n)
        # The warm-up compiles with a stand-in for the partials, whose row count is what it decides.
        scalars = (n_rows, n_cols, float(self.eps), n_blocks)
        stand_in = (x, w, dy, dx, torch.empty(1, dtype=torch.float32, device=x.device), *scalars)
        n_parts = _programs(stand_in, constants, num_warps, x.device, n_blocks)
        partials = torch.empty((n_parts, n_cols), dtype=torch.float32, device=x.device)
        _rmsnorm_bwd_persistent_kernel[(n_parts,)](x, w, dy, dx, partials, *scalars, **constants, num_warps=num_warps)
        block_c = min(triton.next_power_of_2(n_cols), BLOCK_C)
        block_p = min(triton.next_power_of_2(n_parts), MAX_BLOCK_P)
        _sum_partials_kernel[(triton.cdiv(n_cols, block_c),)](
            partials, dw, n_parts, n_cols, BLOCK_P=block_p, BLOCK_C=block_c, num_warps=4
        )
        return dx, dw
