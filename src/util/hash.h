/* hash.h - the string hash shared by every intern table in tprof.
 *
 * Interning sits on the trace reader's hot path (one lookup per event name), so the hash reads
 * eight bytes per round instead of one. It is not cryptographic; tables resolve collisions. */
#ifndef TP_UTIL_HASH_H
#define TP_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t tp_hash_mix(uint64_t h) {
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return h;
}

static inline uint64_t tp_hash_bytes(const void *data, size_t len) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (len * 0xff51afd7ed558ccdULL);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 29;
        p += 8;
        len -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, p, len);
    h = (h ^ tail) * 0x94d049bb133111ebULL;
    return tp_hash_mix(h);
}

#endif
