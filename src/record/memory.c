/* memory.c - live allocations per device, so that frees know their size and every memory event
 * carries the device's Total Allocated, as PyTorch's allocator reports it.
 *
 * Tracking runs for the whole session (windows or not) when profile_memory is on, so totals are
 * right in a window that opens long after the allocations. One mutex: memory events are rare
 * next to ranges, and a free may come from another thread than its allocation. */
#include "record/memory.h"

#include "util/hash.h"
#include "util/hashtab.h"
#include "util/lock.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { TP_MEM_DEVICES = 65 }; /* -1 (the host) and CUDA devices 0..63 */

/* A live allocation, kept in its slot (24 bytes): a free touches one slot, not a slot and an
 * item, as the table written for this file did. */
typedef struct mem_slot {
    tp_hslot h; /* ref: the device + 2 (never 0: devices start at -1) */
    uint64_t addr;
    int64_t bytes;
} mem_slot;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_hashtab live = {.esz = sizeof(mem_slot)}; /* (addr, device) -> its mem_slot */
static int64_t totals[TP_MEM_DEVICES];
static int tracking;

static uint32_t slot_hash(uint64_t addr, int device) {
    return (uint32_t)tp_hash_mix(addr ^ ((uint64_t)(unsigned)device << 48));
}

static int slot_eq(const void *ctx, const tp_hslot *slot, const void *key) {
    (void)ctx;
    const mem_slot *s = (const mem_slot *)(const void *)slot, *k = key;
    return s->addr == k->addr && s->h.ref == k->h.ref;
}

void tp_mem_start(void) {
    tp_lock(&mem_lock);
    tp_hashtab_free(&live);
    memset(totals, 0, sizeof(totals));
    tracking = 1;
    tp_unlock(&mem_lock);
}

void tp_mem_stop(void) {
    tp_lock(&mem_lock);
    tp_hashtab_free(&live);
    tracking = 0;
    tp_unlock(&mem_lock);
}

pthread_mutex_t *tp_mem_mutex(void) {
    return &mem_lock;
}

int tp_mem_update(int device, uint64_t addr, int64_t bytes, int is_free, tp_mem_change *out) {
    if (addr == 0 || device < -1 || device >= TP_MEM_DEVICES - 1) return -1;
    int rc = -1;
    tp_lock(&mem_lock);
    if (!tracking) goto done;
    mem_slot k = {.h.ref = (uint32_t)(device + 2), .addr = addr};
    uint32_t h = slot_hash(addr, device);
    if (is_free) {
        if (!live.nslots) goto done;
        size_t i = tp_hashtab_find(&live, h, slot_eq, NULL, &k);
        /* not there: allocated before the session, or never reported */
        if (!tp_hashtab_ref(&live, i)) goto done;
        out->bytes = -((mem_slot *)(void *)tp_hashtab_at(&live, i))->bytes;
        tp_hashtab_remove(&live, i);
    } else {
        if (tp_hashtab_reserve(&live, 1024)) goto done;
        size_t i = tp_hashtab_find(&live, h, slot_eq, NULL, &k);
        mem_slot *s = (mem_slot *)(void *)tp_hashtab_at(&live, i);
        if (s->h.ref)
            totals[device + 1] -= s->bytes; /* reported twice: replace */
        else
            tp_hashtab_put(&live, i, h, k.h.ref);
        s->addr = addr;
        s->bytes = bytes;
        out->bytes = bytes;
    }
    totals[device + 1] += out->bytes;
    out->total = totals[device + 1];
    rc = 0;
done:
    tp_unlock(&mem_lock);
    return rc;
}

size_t tp_mem_totals(int *devices, int64_t *out, size_t max) {
    size_t n = 0;
    tp_lock(&mem_lock);
    for (int d = 0; d < TP_MEM_DEVICES && n < max; d++) {
        if (!tracking || !totals[d]) continue;
        devices[n] = d - 1;
        out[n++] = totals[d];
    }
    tp_unlock(&mem_lock);
    return n;
}
