/* memory.c - live allocations per device, so that frees know their size and every memory event
 * carries the device's Total Allocated, as PyTorch's allocator reports it.
 *
 * Tracking runs for the whole session (windows or not) when profile_memory is on, so totals are
 * right in a window that opens long after the allocations. One mutex: memory events are rare
 * next to ranges, and a free may come from another thread than its allocation. */
#include "record/memory.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { TP_MEM_DEVICES = 65 }; /* -1 (the host) and CUDA devices 0..63 */

typedef struct mem_slot {
    uint64_t addr; /* 0 = empty (a NULL pointer is never tracked) */
    int64_t bytes;
    int device;
} mem_slot;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_slot *slots;
static size_t nslots, nused; /* nslots a power of two, nused <= nslots / 2 */
static int64_t totals[TP_MEM_DEVICES];
static int tracking;

static size_t slot_of(uint64_t addr, int device, size_t mask) {
    uint64_t h = (addr ^ ((uint64_t)(unsigned)device << 48)) * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h >> 20) & mask;
}

static int grow(void) {
    size_t n = nslots ? nslots * 2 : 1024;
    mem_slot *s = calloc(n, sizeof(*s));
    if (!s) return -1;
    for (size_t i = 0; i < nslots; i++) {
        if (!slots[i].addr) continue;
        size_t j = slot_of(slots[i].addr, slots[i].device, n - 1);
        while (s[j].addr)
            j = (j + 1) & (n - 1);
        s[j] = slots[i];
    }
    free(slots);
    slots = s;
    nslots = n;
    return 0;
}

/* The slot holding (addr, device), or the empty slot that ends its probe. */
static size_t find(uint64_t addr, int device) {
    size_t mask = nslots - 1, i = slot_of(addr, device, mask);
    while (slots[i].addr && (slots[i].addr != addr || slots[i].device != device))
        i = (i + 1) & mask;
    return i;
}

/* Linear probing deletion without tombstones: later entries of the cluster move back into the
 * hole whenever their home slot does not lie cyclically between the hole and them. */
static void remove_at(size_t hole) {
    size_t mask = nslots - 1;
    for (size_t j = (hole + 1) & mask; slots[j].addr; j = (j + 1) & mask) {
        size_t home = slot_of(slots[j].addr, slots[j].device, mask);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            slots[hole] = slots[j];
            hole = j;
        }
    }
    memset(&slots[hole], 0, sizeof(slots[hole]));
    nused--;
}

void tp_mem_start(void) {
    pthread_mutex_lock(&mem_lock);
    free(slots);
    slots = NULL;
    nslots = nused = 0;
    memset(totals, 0, sizeof(totals));
    tracking = 1;
    pthread_mutex_unlock(&mem_lock);
}

void tp_mem_stop(void) {
    pthread_mutex_lock(&mem_lock);
    free(slots);
    slots = NULL;
    nslots = nused = 0;
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
    if (is_free) {
        if (!nslots) goto done;
        size_t i = find(addr, device);
        if (!slots[i].addr) goto done; /* allocated before the session, or never reported */
        out->bytes = -slots[i].bytes;
        remove_at(i);
    } else {
        if ((nused + 1) * 2 > nslots && grow()) goto done;
        size_t i = find(addr, device);
        if (slots[i].addr)
            totals[device + 1] -= slots[i].bytes; /* reported twice: replace */
        else
            nused++;
        slots[i] = (mem_slot){addr, bytes, device};
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
