/* memory.h - the session's live allocations and per-device totals (profile_memory). */
#ifndef TP_RECORD_MEMORY_H
#define TP_RECORD_MEMORY_H

#include <pthread.h>
#include <stdint.h>

typedef struct tp_mem_change {
    int64_t bytes; /* positive for an allocation, negative for a free */
    int64_t total; /* the device's allocated bytes after it */
} tp_mem_change;

/* Starts (forgetting everything) and stops tracking, with the session. */
void tp_mem_start(void);
void tp_mem_stop(void);
/* The tracker's lock, for the session's fork handlers only. */
pthread_mutex_t *tp_mem_mutex(void);
/* An allocation of `bytes` at addr on device (-1 = host, 0..63 = CUDA), or its free (bytes
 * ignored). 0 with *out filled; -1 when not tracking, for a NULL address or another device,
 * and for the free of an address not seen allocated. */
int tp_mem_update(int device, uint64_t addr, int64_t bytes, int is_free, tp_mem_change *out);
/* The devices holding allocated bytes now: fills devices[i] and totals[i], returns how many
 * (at most max). */
size_t tp_mem_totals(int *devices, int64_t *totals, size_t max);
/* Records, on the calling thread, one [memory] event per device holding memory (Bytes 0, its
 * Total Allocated), so a window that opens after the allocations still knows what is held. */
void tp_mem_record_snapshot(void);

#endif
