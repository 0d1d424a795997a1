/* gpu.c - GPU busy time: per device, the length of the union of its kernel, copy and set
 * intervals (SEMANTICS.md §3). A device is the pid of its device ranges, as Kineto writes them
 * (pid = device, tid = stream); overlapping work on several streams counts once.
 *
 * The intervals come as records {start as a time key, duration}, so that sorting and merging
 * them never goes back to the events. */
#include "analysis/internal.h"

int tp_gpu_union(tp_order *o, tp_keyed *work, size_t n, int64_t *busy_ns) {
    *busy_ns = 0;
    if (n == 0) return 0;
    if (tp_sort_keyed(&o->spare, work, n)) return -1;
    int64_t busy = 0, start = tp_key_time(work[0].key);
    int64_t end = tp_add_sat(start, (int64_t)work[0].val);
    for (size_t i = 1; i < n; i++) {
        int64_t ts = tp_key_time(work[i].key), e_end = tp_add_sat(ts, (int64_t)work[i].val);
        if (ts > end) {
            busy = tp_add_sat(busy, end - start);
            start = ts;
        }
        if (e_end > end) end = e_end;
    }
    *busy_ns = tp_add_sat(busy, end - start);
    return 0;
}
