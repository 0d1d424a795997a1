/* busy.h - the busy wait the C training loops of the tests (tp_flight_loop.c, tp_rank_loop.c)
 * stand in for work with: wall time, so that a stage's length holds on a loaded machine too. */
#ifndef TP_TESTS_BUSY_H
#define TP_TESTS_BUSY_H

#include <time.h>

static inline long long now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static inline void spin(long us) {
    long long end = now_us() + us;
    while (now_us() < end) {
    }
}

#endif
