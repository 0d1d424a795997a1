/* copy.h - the events of one model appended to another: how `tprof merge` gathers ranks into one
 * trace, and how the analysis takes a merged trace apart into its ranks again.
 *
 * Strings are interned again in the destination, times are moved to its base_ns (plus a shift:
 * a rank's clock offset), correlation ids are moved by corr_base (so launches of different ranks
 * never pair up), and each track goes where map_track says. */
#ifndef TP_MODEL_COPY_H
#define TP_MODEL_COPY_H

#include "model/model.h"

typedef struct tp_copy_opts {
    int64_t shift_ns;   /* added to every absolute time */
    uint64_t corr_base; /* added to every non-zero correlation id */
    /* The destination track of src's track t, UINT32_MAX to leave its events out, or
     * UINT32_MAX - 1 when out of memory. Called once per source track. */
    uint32_t (*map_track)(void *ctx, tp_model *dst, const tp_model *src, uint32_t t);
    /* Called with each event copied, the last of dst's with its args: it may change the event
     * and add args to it. 0, or -1 when out of memory. Optional. */
    int (*on_event)(void *ctx, tp_model *dst, tp_event *ev);
    void *ctx;
} tp_copy_opts;

/* Appends src's events (and devices) to dst. 0, or -1 when out of memory (dst->failed). */
int tp_model_append(tp_model *dst, const tp_model *src, const tp_copy_opts *o);

/* src's devices added to dst's (a device dst already names keeps dst's facts); its events are
 * left alone. A device that cannot be added for want of memory is left out. */
void tp_model_copy_devices(tp_model *dst, const tp_model *src);

/* src's track t in dst, added if new, with src's process and thread names where it has them:
 * a map_track (ctx unused) that keeps every track. UINT32_MAX - 1 when out of memory. */
uint32_t tp_copy_track(void *ctx, tp_model *dst, const tp_model *src, uint32_t t);

/* src's string id as a string of dst (interned there); TP_STR_EMPTY stays empty. */
tp_str tp_model_restr(tp_model *dst, const tp_model *src, tp_str id);

#endif
