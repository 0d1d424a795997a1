/* tp_rank_loop.c - one rank of a two-process C training loop for the multi-rank tests
 * (tests/integration/test_summaries.py): each step a dataloader, forward and backward stage (busy
 * waits), then an all-reduce marked with tprof_collective_begin/end whose ranks really wait for
 * each other, through files in a shared directory. The rank is RANK (and WORLD_SIZE), as torchrun
 * sets them; the rank given --slow-rank loads its data --slow-ms longer, so it is the straggler.
 *
 *   tp_rank_loop --sync DIR [--steps N] [--slow-rank R] [--slow-ms M] --profile --profiling.<k> v
 *
 * The barrier: at collective seq, rank r creates DIR/<seq>.<r> and waits until every rank's file
 * of that seq exists. Exits 2 on a bad argument, 4 when a peer does not arrive within 30 s. */
#include "busy.h"
#include "tprof.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int arrive(const char *dir, long seq, int rank) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%ld.%d", dir, seq, rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

/* Waits until every rank has arrived at seq (polling every 20 us: the waiting is what the
 * straggler analysis measures). 0, or -1 after 30 s. */
static int wait_all(const char *dir, long seq, int world) {
    long long give_up = now_us() + 30 * 1000000LL;
    for (int r = 0; r < world; r++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%ld.%d", dir, seq, r);
        while (access(path, F_OK) != 0) {
            if (now_us() > give_up) return -1;
            struct timespec pause = {0, 20000};
            nanosleep(&pause, NULL);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (tprof_init(&argc, argv) != 0) return 2;
    const char *dir = NULL;
    long steps = 20, slow_ms = 20;
    int slow_rank = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sync"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--steps"))
            steps = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--slow-rank"))
            slow_rank = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--slow-ms"))
            slow_ms = atol(argv[i + 1]);
        else
            return 2;
    }
    const char *r = getenv("RANK"), *w = getenv("WORLD_SIZE");
    int rank = r ? atoi(r) : 0, world = w ? atoi(w) : 1;
    if (!dir || steps < 1 || world < 1) return 2;
    for (long step = 0; step < steps; step++) {
        {
            TPROF_ZONE("dataloader");
            spin(2000 + (rank == slow_rank ? slow_ms * 1000 : 0));
        }
        {
            TPROF_ZONE("forward");
            spin(3000);
        }
        {
            TPROF_ZONE("backward");
            spin(3000);
        }
        tprof_collective_begin("file:allreduce", step + 1, 4096, world, 0);
        int ok = arrive(dir, step + 1, rank) == 0 && wait_all(dir, step + 1, world) == 0;
        tprof_collective_end();
        if (!ok) return 4;
        tprof_step();
    }
    tprof_shutdown();
    return 0;
}
