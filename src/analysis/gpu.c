/* gpu.c - GPU busy time: per device, the length of the union of its kernel, copy and set
 * intervals (docs/SEMANTICS.md §3). A device is the pid of its device ranges, as Kineto writes them
 * (pid = device, tid = stream); overlapping work on several streams counts once, and only the
 * part inside the model's window counts (docs/METRICS.md), so busy never exceeds the window.
 *
 * The intervals come as records {start as a time key, duration}, so that sorting and merging
 * them never goes back to the events. */
#include "analysis/internal.h"

int tp_gpu_union(tp_order *o, tp_keyed *work, size_t n, int64_t lo, int64_t hi, int64_t *busy_ns) {
    *busy_ns = 0;
    if (n == 0 || hi <= lo) return 0;
    if (tp_sort_keyed(&o->spare, work, n)) return -1;
    /* [start, end) is the interval being merged; empty (start == end) before the first one
     * that reaches into the window */
    int64_t busy = 0, start = lo, end = lo;
    for (size_t i = 0; i < n; i++) {
        int64_t ts = tp_key_time(work[i].key), e_end = tp_add_sat(ts, (int64_t)work[i].val);
        if (ts < lo) ts = lo;
        if (e_end > hi) e_end = hi;
        if (e_end <= ts) continue; /* entirely outside the window */
        if (ts > end) {
            busy = tp_add_sat(busy, end - start);
            start = ts;
            end = ts;
        }
        if (e_end > end) end = e_end;
    }
    *busy_ns = tp_add_sat(busy, end - start);
    return 0;
}

int tp_gpu_past(const tp_keyed *w, int64_t end, tp_keyed *past) {
    int64_t ts = tp_key_time(w->key), w_end = tp_add_sat(ts, (int64_t)w->val);
    if (w_end <= end) return 0;
    if (ts < end) ts = end;
    *past = (tp_keyed){tp_time_key(ts), (uint64_t)(w_end - ts)};
    return 1;
}
