/* copy.c - appending one model's events to another (copy.h). Strings go through a map from the
 * source's ids to the destination's, filled as they are met, so each is interned once. */
#include "model/copy.h"

#include <stdlib.h>
#include <string.h>

#define TRACK_NONE UINT32_MAX
#define TRACK_OOM  (UINT32_MAX - 1)

typedef struct copier {
    tp_model *dst;
    const tp_model *src;
    tp_str *str_map;    /* source id -> destination id + 1; 0 not yet interned */
    uint32_t *track_of; /* source track -> destination track */
} copier;

tp_str tp_model_restr(tp_model *dst, const tp_model *src, tp_str id) {
    if (id == TP_STR_EMPTY) return TP_STR_EMPTY;
    return tp_strtab_intern_from(&dst->strings, &src->strings, id);
}

static tp_str restr(copier *c, tp_str id) {
    if (id == TP_STR_EMPTY || id >= c->src->strings.n) return TP_STR_EMPTY;
    if (!c->str_map[id]) c->str_map[id] = tp_model_restr(c->dst, c->src, id) + 1;
    return c->str_map[id] - 1;
}

static int copy_args(copier *c, tp_event *ev, const tp_event *se) {
    for (uint32_t i = 0; i < se->nargs; i++) {
        tp_arg a = c->src->args[se->arg0 + i];
        a.key = restr(c, a.key);
        if (a.type == TP_ARG_STR || a.type == TP_ARG_JSON) a.v.s = restr(c, a.v.s);
        if (tp_model_add_arg(c->dst, ev, a.key, (tp_arg_type)a.type, &a.v)) return -1;
    }
    return 0;
}

static int copy_event(copier *c, const tp_event *se, const tp_copy_opts *o, int64_t shift) {
    uint32_t track = se->track < c->src->ntracks ? c->track_of[se->track] : TRACK_NONE;
    if (track == TRACK_NONE) return 0;
    if (track == TRACK_OOM) return -1;
    tp_event *ev = tp_model_add_event(c->dst);
    if (!ev) return -1;
    uint32_t arg0 = ev->arg0;
    *ev = *se;
    ev->arg0 = arg0;
    ev->nargs = 0;
    ev->ts = se->ts + shift;
    ev->corr = se->corr ? se->corr + o->corr_base : 0;
    ev->name = restr(c, se->name);
    ev->cat = restr(c, se->cat);
    ev->track = track;
    if (copy_args(c, ev, se)) return -1;
    return o->on_event ? o->on_event(o->ctx, c->dst, ev) : 0;
}

void tp_model_copy_devices(tp_model *dst, const tp_model *src) {
    for (size_t i = 0; i < src->ndevices; i++) {
        const tp_device *s = &src->devices[i];
        tp_device *d = tp_model_device(dst, s->id);
        if (!d || d->name != TP_STR_EMPTY) continue; /* kept: the first model's device */
        *d = *s;
        d->name = tp_model_restr(dst, src, s->name);
    }
}

uint32_t tp_copy_track(void *ctx, tp_model *dst, const tp_model *src, uint32_t t) {
    (void)ctx;
    const tp_track *s = &src->tracks[t];
    uint32_t d = tp_model_track(dst, s->pid, tp_model_restr(dst, src, s->pid_str), s->tid,
                                tp_model_restr(dst, src, s->tid_str));
    if (d == UINT32_MAX) return UINT32_MAX - 1;
    if (s->process_name != TP_STR_EMPTY)
        dst->tracks[d].process_name = tp_model_restr(dst, src, s->process_name);
    if (s->thread_name != TP_STR_EMPTY)
        dst->tracks[d].thread_name = tp_model_restr(dst, src, s->thread_name);
    return d;
}

int tp_model_append(tp_model *dst, const tp_model *src, const tp_copy_opts *o) {
    copier c = {.dst = dst, .src = src};
    c.str_map = calloc(src->strings.n ? src->strings.n : 1, sizeof(*c.str_map));
    c.track_of = malloc((src->ntracks ? src->ntracks : 1) * sizeof(*c.track_of));
    int rc = c.str_map && c.track_of ? 0 : -1;
    for (size_t t = 0; rc == 0 && t < src->ntracks; t++)
        c.track_of[t] = o->map_track(o->ctx, dst, src, (uint32_t)t);
    /* times relative to dst's base: src's absolute time, shifted, less dst's base */
    int64_t shift = src->base_ns - dst->base_ns + o->shift_ns;
    for (size_t i = 0; rc == 0 && i < src->nevents; i++)
        rc = copy_event(&c, &src->events[i], o, shift);
    if (rc == 0) tp_model_copy_devices(dst, src);
    free(c.str_map);
    free(c.track_of);
    if (rc) dst->failed = 1;
    return rc;
}
