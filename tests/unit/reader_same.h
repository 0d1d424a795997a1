/* reader_same.h - whether two models read from the same input are the same, for the tests that
 * read it with the event fast path and without (tests/unit/test_trace_reader_fast.c, the fuzz
 * target): every event, arg, track and string, and the run facts. */
#ifndef TP_READER_SAME_H
#define TP_READER_SAME_H

#include "model/model.h"

#include <string.h>

static inline int reader_same_model(const tp_model *a, const tp_model *b) {
    if (a->nevents != b->nevents || a->nargs != b->nargs || a->ntracks != b->ntracks ||
        a->ndevices != b->ndevices || a->strings.n != b->strings.n || a->base_ns != b->base_ns ||
        a->rank != b->rank || a->world_size != b->world_size ||
        a->input_events != b->input_events || a->input_bytes != b->input_bytes ||
        a->dropped_events != b->dropped_events || a->partial != b->partial)
        return 0;
    for (size_t i = 0; i < a->nevents; i++) {
        const tp_event *x = &a->events[i], *y = &b->events[i];
        if (x->ts != y->ts || x->dur != y->dur || x->corr != y->corr || x->name != y->name ||
            x->cat != y->cat || x->track != y->track || x->arg0 != y->arg0 ||
            x->nargs != y->nargs || x->kind != y->kind || x->flags != y->flags)
            return 0;
    }
    for (size_t i = 0; i < a->nargs; i++) {
        const tp_arg *x = &a->args[i], *y = &b->args[i];
        if (x->key != y->key || x->type != y->type) return 0;
        /* doubles compared as bits: a NaN equals itself */
        if (x->type == TP_ARG_INT || x->type == TP_ARG_DOUBLE ? memcmp(&x->v.i, &y->v.i, 8) != 0
                                                              : x->v.s != y->v.s)
            return 0;
    }
    for (size_t i = 0; i < a->ntracks; i++) {
        const tp_track *x = &a->tracks[i], *y = &b->tracks[i];
        if (x->pid != y->pid || x->tid != y->tid || x->pid_str != y->pid_str ||
            x->tid_str != y->tid_str || x->process_name != y->process_name ||
            x->thread_name != y->thread_name)
            return 0;
    }
    for (uint32_t i = 0; i < a->strings.n; i++)
        if (strcmp(tp_strtab_get(&a->strings, i), tp_strtab_get(&b->strings, i)) != 0) return 0;
    return 1;
}

#endif
