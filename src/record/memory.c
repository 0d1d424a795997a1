/* memory.c - live allocations per device, so that frees know their size and every memory event
 * carries the device's Total Allocated, as PyTorch's allocator reports it.
 *
 * Tracking runs for the whole session (windows or not) when profile_memory is on, so totals are
 * right in a window that opens long after the allocations. One mutex: memory events are rare
 * next to ranges, and a free may come from another thread than its allocation. */
#include "record/memory.h"

#include "util/hash.h"
#include "util/hashtab.h"
#include "util/vec.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { TP_MEM_DEVICES = 65 }; /* -1 (the host) and CUDA devices 0..63 */

typedef struct mem_block {
    uint64_t addr; /* never 0 (a NULL pointer is never tracked) */
    int64_t bytes;
    int device;
} mem_block;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_hashtab live;     /* (addr, device) -> block + 1 */
static mem_block *blocks;   /* the live blocks, dense: a free moves the last into its place */
static size_t nblocks, cap_blocks;
static int64_t totals[TP_MEM_DEVICES];
static int tracking;

static uint32_t block_hash(uint64_t addr, int device) {
    return (uint32_t)tp_hash_mix(addr ^ ((uint64_t)(unsigned)device << 48));
}

static int block_eq(const void *ctx, uint32_t ref, const void *key) {
    const mem_block *b = &((const mem_block *)ctx)[ref - 1], *k = key;
    return b->addr == k->addr && b->device == k->device;
}

/* Forgets every block (with the lock held). */
static void forget(void) {
    tp_hashtab_free(&live);
    free(blocks);
    blocks = NULL;
    nblocks = cap_blocks = 0;
}

void tp_mem_start(void) {
    pthread_mutex_lock(&mem_lock);
    forget();
    memset(totals, 0, sizeof(totals));
    tracking = 1;
    pthread_mutex_unlock(&mem_lock);
}

void tp_mem_stop(void) {
    pthread_mutex_lock(&mem_lock);
    forget();
    tracking = 0;
    pthread_mutex_unlock(&mem_lock);
}

pthread_mutex_t *tp_mem_mutex(void) {
    return &mem_lock;
}

int tp_mem_update(int device, uint64_t addr, int64_t bytes, int is_free, tp_mem_change *out) {
    if (addr == 0 || device < -1 || device >= TP_MEM_DEVICES - 1) return -1;
    int rc = -1;
    pthread_mutex_lock(&mem_lock);
    if (!tracking) goto done;
    mem_block k = {.addr = addr, .device = device};
    uint32_t h = block_hash(addr, device);
    if (is_free) {
        if (!live.nslots) goto done;
        size_t i = tp_hashtab_find(&live, h, block_eq, blocks, &k);
        uint32_t ref = tp_hashtab_ref(&live, i);
        if (!ref) goto done; /* allocated before the session, or never reported */
        out->bytes = -blocks[ref - 1].bytes;
        tp_hashtab_remove(&live, i);
        if (ref != nblocks) { /* the last block fills the hole */
            const mem_block *last = &blocks[nblocks - 1];
            tp_hashtab_renumber(&live, block_hash(last->addr, last->device), (uint32_t)nblocks,
                                ref);
            blocks[ref - 1] = *last;
        }
        nblocks--;
    } else {
        if (tp_hashtab_reserve(&live, 1024)) goto done;
        size_t i = tp_hashtab_find(&live, h, block_eq, blocks, &k);
        uint32_t ref = tp_hashtab_ref(&live, i);
        if (ref) {
            totals[device + 1] -= blocks[ref - 1].bytes; /* reported twice: replace */
        } else {
            if (nblocks >= UINT32_MAX - 1 || TP_GROW(blocks, cap_blocks, nblocks + 1)) goto done;
            ref = (uint32_t)++nblocks;
            tp_hashtab_put(&live, i, h, ref);
        }
        k.bytes = bytes;
        blocks[ref - 1] = k;
        out->bytes = bytes;
    }
    totals[device + 1] += out->bytes;
    out->total = totals[device + 1];
    rc = 0;
done:
    pthread_mutex_unlock(&mem_lock);
    return rc;
}

size_t tp_mem_totals(int *devices, int64_t *out, size_t max) {
    size_t n = 0;
    pthread_mutex_lock(&mem_lock);
    for (int d = 0; d < TP_MEM_DEVICES && n < max; d++) {
        if (!tracking || !totals[d]) continue;
        devices[n] = d - 1;
        out[n++] = totals[d];
    }
    pthread_mutex_unlock(&mem_lock);
    return n;
}
