/* gpu.c - GPU busy time: per device, the length of the union of its kernel, copy and set
 * intervals (SEMANTICS.md §3). A device is the pid of its device ranges, as Kineto writes them
 * (pid = device, tid = stream); overlapping work on several streams counts once. */
#include "analysis/internal.h"

#include <stdlib.h>

/* key[i] = the device number of the work on track tracks[i]; returns the device count, or -1
 * out of memory. */
static ptrdiff_t number_devices(const tp_model *m, const uint32_t *tracks, size_t n,
                                uint32_t *key) {
    uint32_t *dev_of_track = malloc((m->ntracks ? m->ntracks : 1) * sizeof(*dev_of_track));
    tp_pairs devices = {0};
    ptrdiff_t rc = dev_of_track ? 0 : -1;
    for (size_t t = 0; rc == 0 && t < m->ntracks; t++)
        dev_of_track[t] = UINT32_MAX;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint32_t t = tracks[i];
        if (dev_of_track[t] == UINT32_MAX) {
            const tp_track *tr = &m->tracks[t];
            dev_of_track[t] = tp_pairs_number(&devices, tr->pid, tr->pid_str);
            if (dev_of_track[t] == UINT32_MAX) rc = -1;
        }
        key[i] = dev_of_track[t];
    }
    if (rc == 0) rc = (ptrdiff_t)devices.n;
    tp_pairs_free(&devices);
    free(dev_of_track);
    return rc;
}

static int64_t union_length(const tp_event *ev, const uint32_t *idx, size_t n) {
    int64_t busy = 0, start = ev[idx[0]].ts, end = tp_ev_end(&ev[idx[0]]);
    for (size_t i = 1; i < n; i++) {
        const tp_event *e = &ev[idx[i]];
        if (e->ts > end) {
            busy = tp_add_sat(busy, end - start);
            start = e->ts;
        }
        int64_t e_end = tp_ev_end(e);
        if (e_end > end) end = e_end;
    }
    return tp_add_sat(busy, end - start);
}

int tp_gpu_busy(tp_scan *s, const uint32_t *work, const uint32_t *tracks, size_t n,
                int64_t *busy_ns, size_t *devices) {
    const tp_model *m = s->m;
    *busy_ns = 0;
    *devices = 0;
    if (n == 0) return 0;
    uint32_t *key = malloc(n * sizeof(*key)), *grouped = malloc(n * sizeof(*grouped));
    size_t *start = NULL;
    ptrdiff_t ndev = key && grouped ? number_devices(m, tracks, n, key) : -1;
    if (ndev > 0) start = malloc(((size_t)ndev + 1) * sizeof(*start));
    int rc = start ? 0 : -1;
    if (start) {
        tp_group_by_key(work, key, n, (size_t)ndev, grouped, start);
        for (ptrdiff_t d = 0; d < ndev && rc == 0; d++) {
            uint32_t *seg = grouped + start[d];
            size_t len = start[d + 1] - start[d];
            rc = tp_order_ranges(&s->order, m->events, seg, len);
            if (rc == 0) *busy_ns = tp_add_sat(*busy_ns, union_length(m->events, seg, len));
        }
        *devices = (size_t)ndev;
    }
    free(start);
    free(grouped);
    free(key);
    return rc;
}
