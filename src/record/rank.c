/* rank.c - this process's rank and the world size, as launchers put them in the environment.
 *
 * torchrun and torch.distributed set RANK/WORLD_SIZE (LOCAL_RANK within a node), Open MPI
 * OMPI_COMM_WORLD_*, MPICH and Intel MPI PMI_*, Slurm SLURM_PROCID/SLURM_NTASKS. The first
 * variable present with a valid value wins. */
#include "record/rank.h"

#include "config/config.h"
#include "util/log.h"

#include <stdlib.h>

/* The first of names holding an integer >= min; -1 when none does. */
static int64_t env_int(const char *const *names, size_t n, int64_t min) {
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(names[i]);
        int64_t x;
        if (!v || !*v) continue;
        if (tp_parse_int(v, &x) == 0 && x >= min) return x;
        tp_log_warn("ignoring %s=\"%s\": not an integer >= %lld", names[i], v, (long long)min);
    }
    return -1;
}

void tp_rank_detect(tp_rank *r) {
    static const char *const ranks[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                                        "LOCAL_RANK"};
    static const char *const sizes[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                        "SLURM_NTASKS"};
    int64_t rank = env_int(ranks, sizeof(ranks) / sizeof(ranks[0]), 0);
    int64_t size = env_int(sizes, sizeof(sizes) / sizeof(sizes[0]), 1);
    r->distributed = rank >= 0 || size > 1;
    r->rank = rank >= 0 ? rank : 0;
    r->world_size = size >= 1 ? size : (r->distributed ? -1 : 1);
}
