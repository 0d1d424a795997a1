/* tp_flight_loop.c - a training loop for the flight recorder's tests (tests/integration/
 * test_flight.py): four stages per step, each a short busy wait, one step made slow by a sleep in
 * its data loading, and on request an explicit save, a SIGUSR1 to itself, or the resident memory
 * at given steps.
 *
 *   tp_flight_loop [--steps N] [--spin-us U] [--slow-at K] [--slow-ms M] [--save-at S]
 *                  [--usr1-at S] [--reason R] [--rss-at A,B,...] [--open-range] [--cross-steps]
 *                  --profile --profiling.<key> v
 *
 * --open-range keeps one range ("epoch_range") open across every step; --cross-steps begins a
 * range "cross" at the end of each even step and ends it in the next step, for the carry of
 * record/flight.h F3. Exits 3 when tprof_flight_save refuses the save.
 * Prints "rss <step> <bytes>" for each --rss-at step. */
#include "busy.h"
#include "tprof.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long rss_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

static int listed(const char *list, long step) {
    if (!list) return 0;
    for (const char *p = list; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) return 0;
        if (v == step) return 1;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (tprof_init(&argc, argv) != 0) return 2;
    long steps = 1000, spin_us = 200, slow_at = -1, slow_ms = 100, save_at = -1, usr1_at = -1;
    const char *rss_at = NULL, *reason = "explicit";
    int open_range = 0, cross = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--open-range") || !strcmp(a, "--cross-steps")) {
            *(a[2] == 'o' ? &open_range : &cross) = 1;
            continue;
        }
        i++;
        if (!strcmp(a, "--steps"))
            steps = atol(v);
        else if (!strcmp(a, "--spin-us"))
            spin_us = atol(v);
        else if (!strcmp(a, "--slow-at"))
            slow_at = atol(v);
        else if (!strcmp(a, "--slow-ms"))
            slow_ms = atol(v);
        else if (!strcmp(a, "--save-at"))
            save_at = atol(v);
        else if (!strcmp(a, "--usr1-at"))
            usr1_at = atol(v);
        else if (!strcmp(a, "--rss-at"))
            rss_at = v;
        else if (!strcmp(a, "--reason"))
            reason = v;
        else {
            fprintf(stderr, "tp_flight_loop: unknown option %s\n", a);
            return 2;
        }
    }
    if (open_range) TPROF_BEGIN("epoch_range");
    for (long step = 0; step < steps; step++) {
        {
            TPROF_ZONE("dataloader");
            spin(spin_us);
            if (step == slow_at) usleep((useconds_t)slow_ms * 1000);
        }
        if (cross && step % 2) TPROF_END(); /* "cross", begun in the step before */
        {
            TPROF_ZONE("forward");
            spin(spin_us);
        }
        {
            TPROF_ZONE("backward");
            spin(spin_us);
        }
        {
            TPROF_ZONE("optimizer");
            spin(spin_us / 2);
        }
        if (cross && step % 2 == 0) TPROF_BEGIN("cross");
        if (step == save_at && tprof_flight_save(reason) != 0) return 3;
        if (step == usr1_at) {
            raise(SIGUSR1);
            usleep(200000); /* the writer saves while this step is still running */
        }
        tprof_step();
        if (listed(rss_at, step + 1)) printf("rss %ld %ld\n", step + 1, rss_bytes());
    }
    if (cross && steps % 2) TPROF_END();
    if (open_range) TPROF_END();
    tprof_shutdown();
    return 0;
}
