/* cache.h - the report data of each run, computed once per change of the run.
 *
 * The dashboard polls api/data (or api/compare) about every second; analysing a run costs far more
 * than scanning it, so the data (or the error line) is kept per run name with the change key it was
 * computed for (serve/runs.h), and computed again only when the key moved. Entries are shared
 * with the responses being sent (reference counted), the total size is bounded (the least
 * recently used entries go first) and every call is safe from any server thread. */
#ifndef TP_SERVE_CACHE_H
#define TP_SERVE_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_serve_cache tp_serve_cache;

/* One computed result: the report data (ok) or a one-line error (not ok). Read-only once
 * returned; hold it until tp_serve_blob_release. */
typedef struct tp_serve_blob {
    int ok;
    uint64_t key;
    size_t len;
    char *data; /* len bytes, NUL-terminated */
} tp_serve_blob;

/* A cache keeping at most max_bytes of data (one entry is kept even when bigger); each run's
 * analysis may take max_memory (0: no limit), past which its data is the error line. */
tp_serve_cache *tp_serve_cache_new(size_t max_bytes, uint64_t max_memory);
void tp_serve_cache_free(tp_serve_cache *c);

/* What a blob holds. */
typedef enum tp_serve_what {
    TP_SERVE_DATA, /* the report data of a run, or of a pair compared (tp_html_data) */
    TP_SERVE_TRACE /* the Trace view of a run (tp_html_trace) */
} tp_serve_what;

/* The data of run `name` (the run directory paths[0], npaths 1), or of the comparison of two runs
 * (paths[0] against paths[1], npaths 2: `tprof report --compare`'s data; `name` then names the
 * pair, "A/B", which no run name can be), or with TP_SERVE_TRACE a run's Trace view (`name` then
 * "NAME/", which no run nor pair can be), for change key `key`: the cached blob, or one computed
 * now. NULL only when memory ran out. */
tp_serve_blob *tp_serve_cache_get(tp_serve_cache *c, const char *name, const char *const *paths,
                                  size_t npaths, tp_serve_what what, uint64_t key);
/* Drops the caller's reference (NULL is ignored). */
void tp_serve_blob_release(tp_serve_blob *b);

#endif
