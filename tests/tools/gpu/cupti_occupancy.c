/* cupti_occupancy.c - tprof's kernel occupancy estimate for launches read from stdin, one per
 * line: warp_size max_threads_per_sm max_blocks_per_sm regs_per_sm smem_per_sm
 * smem_reserved_per_block num_sms regs_per_thread smem_per_block block_threads grid_blocks.
 * Prints the "est. achieved occupancy %" tprof writes for each (-1 when it writes none). */
#include "gpu/convert.h"

#include <stdio.h>

int main(void) {
#ifdef TPROF_HAVE_CUPTI_HEADERS
    tp_cupti_dev d = {0};
    int regs, smem, threads;
    long blocks;
    while (scanf("%d %d %d %d %d %d %d %d %d %d %ld", &d.warp_size, &d.max_threads_per_sm,
                 &d.max_blocks_per_sm, &d.regs_per_sm, &d.smem_per_sm, &d.smem_reserved_per_block,
                 &d.num_sms, &regs, &smem, &threads, &blocks) == 11) {
        printf("%d\n", tp_cupti_occupancy_pct(&d, regs, smem, threads, (double)blocks / d.num_sms));
    }
#endif
    return 0;
}
