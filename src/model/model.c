/* model.c - building and querying the event model (see model.h). */
#include "model/model.h"

#include "model/kineto.h"
#include "util/hash.h"
#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

/* An event is 48 bytes: a model of 10 M events is 480 MB (docs/ARCHITECTURE.md's budgets). */
_Static_assert(sizeof(tp_event) == 48, "tp_event grew");

void tp_model_init(tp_model *m) {
    memset(m, 0, sizeof(*m));
    tp_strtab_init(&m->strings);
    m->rank = -1;
    m->world_size = -1;
    m->flight_step = -1;
    m->settled_ts = INT64_MIN;
}

void tp_model_free(tp_model *m) {
    tp_strtab_free(&m->strings);
    free(m->events);
    free(m->args);
    free(m->tracks);
    tp_hashtab_free(&m->track_index);
    free(m->devices);
    free(m->open);
    memset(m, 0, sizeof(*m));
}

tp_str tp_model_intern_cstr(tp_model *m, const char *s) {
    return s ? tp_model_intern(m, s, strlen(s)) : TP_STR_EMPTY;
}

static uint32_t track_hash(const tp_track *k) {
    uint64_t key[3] = {(uint64_t)k->pid, (uint64_t)k->tid,
                       ((uint64_t)k->pid_str << 32) | k->tid_str};
    return (uint32_t)tp_hash_bytes(key, sizeof(key));
}

static int track_eq(const void *ctx, const tp_hslot *slot, const void *key) {
    const tp_track *tr = &((const tp_track *)ctx)[slot->ref - 1], *k = key;
    return tr->pid == k->pid && tr->tid == k->tid && tr->pid_str == k->pid_str &&
           tr->tid_str == k->tid_str;
}

uint32_t tp_model_track(tp_model *m, int64_t pid, tp_str pid_str, int64_t tid, tp_str tid_str) {
    tp_track k = {.pid = pid, .tid = tid, .pid_str = pid_str, .tid_str = tid_str};
    uint32_t h = track_hash(&k);
    if (tp_hashtab_reserve(&m->track_index, 64)) goto fail;
    size_t i = tp_hashtab_find(&m->track_index, h, track_eq, m->tracks, &k);
    uint32_t ref = tp_hashtab_ref(&m->track_index, i);
    if (ref) return ref - 1;
    if (m->ntracks >= UINT32_MAX - 1 || TP_GROW(m->tracks, m->cap_tracks, m->ntracks + 1))
        goto fail;
    m->tracks[m->ntracks] = k;
    tp_hashtab_put(&m->track_index, i, h, (uint32_t)m->ntracks + 1);
    return (uint32_t)m->ntracks++;
fail:
    m->failed = 1;
    return UINT32_MAX;
}

tp_event *tp_model_add_event(tp_model *m) {
    if (TP_GROW(m->events, m->cap_events, m->nevents + 1)) {
        m->failed = 1;
        return NULL;
    }
    tp_event *ev = &m->events[m->nevents++];
    memset(ev, 0, sizeof(*ev));
    ev->arg0 = (uint32_t)m->nargs;
    return ev;
}

tp_event *tp_model_new_event(tp_model *m, uint32_t track, int kind, int64_t ts, tp_str name,
                             tp_str cat) {
    tp_event *ev = tp_model_add_event(m);
    if (!ev) return NULL;
    ev->ts = ts;
    ev->name = name;
    ev->cat = cat;
    ev->track = track;
    ev->kind = (uint8_t)kind;
    return ev;
}

int tp_model_add_arg(tp_model *m, tp_event *ev, tp_str key, tp_arg_type type, const void *value) {
    if (m->nevents == 0 || ev != &m->events[m->nevents - 1] || ev->nargs == UINT16_MAX ||
        m->nargs >= UINT32_MAX || TP_GROW(m->args, m->cap_args, m->nargs + 1)) {
        m->failed = 1;
        return -1;
    }
    tp_arg *a = &m->args[m->nargs++];
    a->key = key;
    a->type = type;
    switch (type) {
    case TP_ARG_INT:
        memcpy(&a->v.i, value, sizeof(a->v.i));
        break;
    case TP_ARG_DOUBLE:
        memcpy(&a->v.d, value, sizeof(a->v.d));
        break;
    case TP_ARG_STR:
    case TP_ARG_JSON:
        memcpy(&a->v.s, value, sizeof(a->v.s));
        break;
    }
    ev->nargs++;
    return 0;
}

int tp_model_arg_int(tp_model *m, tp_event *ev, const char *key, int64_t v) {
    return tp_model_add_arg(m, ev, tp_model_intern_cstr(m, key), TP_ARG_INT, &v);
}

int tp_model_arg_double(tp_model *m, tp_event *ev, const char *key, double v) {
    return tp_model_add_arg(m, ev, tp_model_intern_cstr(m, key), TP_ARG_DOUBLE, &v);
}

int tp_model_arg_str(tp_model *m, tp_event *ev, const char *key, const char *v) {
    tp_str s = tp_model_intern_cstr(m, v);
    return tp_model_add_arg(m, ev, tp_model_intern_cstr(m, key), TP_ARG_STR, &s);
}

int tp_model_arg_json(tp_model *m, tp_event *ev, const char *key, const char *json) {
    tp_str s = tp_model_intern_cstr(m, json);
    return tp_model_add_arg(m, ev, tp_model_intern_cstr(m, key), TP_ARG_JSON, &s);
}

const tp_arg *tp_event_arg(const tp_model *m, const tp_event *ev, tp_str key) {
    for (uint32_t i = 0; i < ev->nargs; i++)
        if (m->args[ev->arg0 + i].key == key) return &m->args[ev->arg0 + i];
    return NULL;
}

int tp_event_arg_number(const tp_model *m, const tp_event *ev, const char *key, double *out) {
    tp_str k = tp_strtab_find(&m->strings, key, strlen(key));
    const tp_arg *a = k == UINT32_MAX ? NULL : tp_event_arg(m, ev, k);
    if (!a) return -1;
    if (a->type == TP_ARG_INT) {
        *out = (double)a->v.i;
        return 0;
    }
    if (a->type == TP_ARG_DOUBLE) {
        *out = a->v.d;
        return 0;
    }
    return -1;
}

tp_device *tp_model_device(tp_model *m, int64_t id) {
    for (size_t i = 0; i < m->ndevices; i++)
        if (m->devices[i].id == id) return &m->devices[i];
    if (TP_GROW(m->devices, m->cap_devices, m->ndevices + 1)) {
        m->failed = 1;
        return NULL;
    }
    tp_device *d = &m->devices[m->ndevices++];
    memset(d, 0, sizeof(*d));
    d->id = id;
    return d;
}

int64_t tp_step_number(const char *name) {
    if (strncmp(name, tp_kname_step, TP_KLEN(tp_kname_step)) != 0) return -1;
    const char *p = name + TP_KLEN(tp_kname_step);
    if (*p < '0' || *p > '9') return -1;
    int64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (INT64_MAX - 9) / 10) return -1;
        n = n * 10 + (*p - '0');
    }
    return *p ? -1 : n;
}
