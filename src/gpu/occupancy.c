/* occupancy.c - the "est. achieved occupancy %" Kineto writes for each kernel.
 *
 * Resident blocks per SM follow the CUDA occupancy calculator's limits (threads, blocks,
 * registers allocated per warp on each of the SM's four sub-partitions, shared memory with the
 * per-block reservation); the kernel keeps min(resident, launched blocks per SM) of them busy. */
#include "gpu/convert.h"

enum {
    REG_ALLOC_UNIT = 256,  /* registers are allocated per warp in units of 256 */
    SM_SUB_PARTITIONS = 4, /* each sub-partition owns a quarter of the register file */
    SMEM_ALLOC_UNIT = 128, /* shared memory is allocated per block in units of 128 bytes */
};

static int round_up(int v, int unit) {
    return (v + unit - 1) / unit * unit;
}
static int min_int(int a, int b) {
    return a < b ? a : b;
}

static int resident_blocks(const tp_cupti_dev *d, int regs, int smem, int block_threads) {
    int warps_per_block = (block_threads + d->warp_size - 1) / d->warp_size;
    int blocks =
        min_int(d->max_threads_per_sm / d->warp_size / warps_per_block, d->max_blocks_per_sm);
    if (regs > 0) {
        int regs_per_warp = round_up(regs * d->warp_size, REG_ALLOC_UNIT);
        int warps = d->regs_per_sm / SM_SUB_PARTITIONS / regs_per_warp * SM_SUB_PARTITIONS;
        blocks = min_int(blocks, warps / warps_per_block);
    }
    int smem_block = round_up(smem + d->smem_reserved_per_block, SMEM_ALLOC_UNIT);
    if (smem_block > 0) blocks = min_int(blocks, d->smem_per_sm / smem_block);
    return blocks;
}

int tp_cupti_occupancy_pct(const tp_cupti_dev *d, int regs_per_thread, int smem_per_block,
                           int block_threads, double blocks_per_sm) {
    if (!d || d->warp_size <= 0 || d->max_threads_per_sm <= 0 || d->max_blocks_per_sm <= 0 ||
        block_threads <= 0 || blocks_per_sm < 0)
        return -1;
    double busy = resident_blocks(d, regs_per_thread, smem_per_block, block_threads);
    if (blocks_per_sm < busy) busy = blocks_per_sm;
    return (int)(0.5 + busy * block_threads / d->max_threads_per_sm * 100); /* Kineto's rounding */
}
