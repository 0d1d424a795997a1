/* model.c - building and querying the event model (see model.h). */
#include "model/model.h"

#include "util/hash.h"
#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

void tp_model_init(tp_model *m) {
    memset(m, 0, sizeof(*m));
    tp_strtab_init(&m->strings);
    m->rank = -1;
    m->world_size = -1;
    m->flight_step = -1;
}

void tp_model_free(tp_model *m) {
    tp_strtab_free(&m->strings);
    free(m->events);
    free(m->args);
    free(m->tracks);
    free(m->track_slots);
    free(m->devices);
    memset(m, 0, sizeof(*m));
}

tp_str tp_model_intern_cstr(tp_model *m, const char *s) {
    return s ? tp_model_intern(m, s, strlen(s)) : TP_STR_EMPTY;
}

static uint64_t track_hash(int64_t pid, tp_str pid_str, int64_t tid, tp_str tid_str) {
    uint64_t key[3] = {(uint64_t)pid, (uint64_t)tid, ((uint64_t)pid_str << 32) | tid_str};
    return tp_hash_bytes(key, sizeof(key));
}

static int track_index_rebuild(tp_model *m, size_t nslots) {
    uint32_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots) return -1;
    for (size_t t = 0; t < m->ntracks; t++) {
        const tp_track *tr = &m->tracks[t];
        size_t i = track_hash(tr->pid, tr->pid_str, tr->tid, tr->tid_str) & (nslots - 1);
        while (slots[i])
            i = (i + 1) & (nslots - 1);
        slots[i] = (uint32_t)t + 1;
    }
    free(m->track_slots);
    m->track_slots = slots;
    m->ntrack_slots = nslots;
    return 0;
}

uint32_t tp_model_track(tp_model *m, int64_t pid, tp_str pid_str, int64_t tid, tp_str tid_str) {
    if ((m->ntracks + 1) * 2 > m->ntrack_slots &&
        track_index_rebuild(m, m->ntrack_slots ? m->ntrack_slots * 2 : 64))
        goto fail;
    size_t mask = m->ntrack_slots - 1;
    size_t i = track_hash(pid, pid_str, tid, tid_str) & mask;
    for (; m->track_slots[i]; i = (i + 1) & mask) {
        const tp_track *tr = &m->tracks[m->track_slots[i] - 1];
        if (tr->pid == pid && tr->tid == tid && tr->pid_str == pid_str && tr->tid_str == tid_str)
            return m->track_slots[i] - 1;
    }
    if (m->ntracks >= UINT32_MAX - 1 || TP_GROW(m->tracks, m->cap_tracks, m->ntracks + 1))
        goto fail;
    m->tracks[m->ntracks] =
        (tp_track){.pid = pid, .tid = tid, .pid_str = pid_str, .tid_str = tid_str};
    m->track_slots[i] = (uint32_t)m->ntracks + 1;
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
    static const char prefix[] = "ProfilerStep#";
    if (strncmp(name, prefix, sizeof(prefix) - 1) != 0) return -1;
    const char *p = name + sizeof(prefix) - 1;
    if (*p < '0' || *p > '9') return -1;
    int64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (INT64_MAX - 9) / 10) return -1;
        n = n * 10 + (*p - '0');
    }
    return *p ? -1 : n;
}
