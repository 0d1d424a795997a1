/* model.h - the one event model at the centre of tprof.
 *
 * The recorder (each closed window) and the trace reader (any Chrome/Kineto file) both produce a
 * tp_model; the exporters write one and every analysis reads one, so the library's console
 * summary and `tprof analyze` cannot disagree (docs/ARCHITECTURE.md).
 *
 * Invariants:
 *  - times are integer nanoseconds; an event's absolute time is base_ns + ts;
 *  - every string is an interned tp_str of `strings`;
 *  - an event's args are the contiguous run args[arg0 .. arg0 + nargs);
 *  - events are in no particular order (analyses sort what they need);
 *  - a track is one (pid, tid) pair as the trace wrote it; a pid or tid written as a decimal
 *    string is stored as that number. */
#ifndef TP_MODEL_MODEL_H
#define TP_MODEL_MODEL_H

#include "model/strtab.h"

#include <stddef.h>
#include <stdint.h>

typedef enum tp_kind {
    TP_HOST_RANGE = 1, /* a complete range on a CPU thread (cpu_op, user_annotation, runtime...) */
    TP_KERNEL,         /* device ranges: GPU work ... */
    TP_MEMCPY,
    TP_MEMSET,
    TP_GPU_ANNOTATION, /* ... and a CPU annotation projected onto a GPU stream (not work) */
    TP_INSTANT,        /* ph "i"/"I", except "[memory]" */
    TP_MEMORY,         /* a "[memory]" instant (args Device Type, Device Id, Bytes, ...) */
    TP_COUNTER,        /* ph "C"; the args are the series */
} tp_kind;

static inline int tp_kind_is_device(int kind) {
    return kind >= TP_KERNEL && kind <= TP_GPU_ANNOTATION;
}
static inline int tp_kind_is_gpu_work(int kind) {
    return kind >= TP_KERNEL && kind <= TP_MEMSET;
}

enum tp_event_flag {
    TP_EVF_STEP = 1u << 0,      /* a host range named ProfilerStep#<n> */
    TP_EVF_TRUNCATED = 1u << 1, /* still open when its window closed; tprof closed it there */
    /* A streamed window's summary cuts a range open across a cut into parts, one per piece
     * (src/sink/artifacts.c): each counts its own time; the last is the range's call, with the
     * range's whole duration in its arg TP_PART_WHOLE_DUR. Only in the sink's pieces. */
    TP_EVF_PART = 1u << 2,      /* a part before the last */
    TP_EVF_LAST_PART = 1u << 3, /* the last part */
};
#define TP_PART_WHOLE_DUR "tprof whole duration"

/* A range still open on its thread when a streamed window's segment was made (record/window.c),
 * which the sink may cut at a piece's end (TP_EVF_PART). */
typedef struct tp_stacked_range {
    uint32_t track;
    tp_str name, cat;
    int64_t ts;
} tp_stacked_range;

/* A flight recorder's save marks its triggering step for trace viewers: an arg of this name on
 * its ProfilerStep range and an instant event of this name at its start, both with the save's
 * reason (docs/FLIGHT.md). Readers take the step from the trace's tprof object (flight_step). */
#define TP_FLIGHT_MARK "tprof flight trigger"

typedef struct tp_event {
    int64_t ts;    /* start, ns relative to the model's base_ns */
    int64_t dur;   /* ns; 0 for instants and counters */
    uint64_t corr; /* correlation id linking a launch to its device work; 0 = none */
    tp_str name;
    tp_str cat; /* the category as written; TP_STR_EMPTY when absent */
    uint32_t track;
    uint32_t arg0; /* first arg in model->args */
    uint16_t nargs;
    uint8_t kind;  /* tp_kind */
    uint8_t flags; /* tp_event_flag bits */
    /* "External id": the op's id (Kineto's, or the one tprof pushed to CUPTI) on an op, and on
     * the launches and GPU work CUPTI tied to it; 0 = none, or an id past 32 bits. A field, not
     * an arg: every op of a Kineto trace has one, and it fills the struct's tail padding. */
    uint32_t ext;
} tp_event;

/* The External id as the model keeps it: 0 (none) unless in [1, UINT32_MAX]. */
static inline uint32_t tp_ext_id(int64_t id) {
    return id > 0 && id <= (int64_t)UINT32_MAX ? (uint32_t)id : 0;
}

typedef enum tp_arg_type {
    TP_ARG_INT,
    TP_ARG_DOUBLE,
    TP_ARG_STR,  /* written as a JSON string */
    TP_ARG_JSON, /* raw JSON text written verbatim (arrays such as "Input Dims", true, null) */
} tp_arg_type;

typedef struct tp_arg {
    tp_str key;
    uint32_t type; /* tp_arg_type */
    union {
        int64_t i;
        double d;
        tp_str s; /* TP_ARG_STR and TP_ARG_JSON */
    } v;
} tp_arg;

typedef struct tp_track {
    int64_t pid, tid;
    tp_str pid_str, tid_str; /* ids that are not numbers ("CPU functions", "stream 7"), else 0 */
    tp_str process_name;     /* from process_name / thread_name metadata, else 0 */
    tp_str thread_name;
} tp_track;

typedef struct tp_device {
    int64_t id;
    tp_str name;
    uint64_t total_mem; /* totalGlobalMem in bytes; 0 when unknown */
    int compute_major, compute_minor, num_sms;
} tp_device;

typedef struct tp_model {
    tp_strtab strings;
    tp_event *events;
    size_t nevents, cap_events;
    tp_arg *args;
    size_t nargs, cap_args;
    tp_track *tracks;
    size_t ntracks, cap_tracks;
    tp_hashtab track_index; /* (pid, pid_str, tid, tid_str) -> track + 1 */
    tp_device *devices;
    size_t ndevices, cap_devices;

    int64_t base_ns; /* absolute time of ts == 0 (baseTimeNanoseconds), 0 when unknown */
    int64_t rank;    /* distributedInfo; -1 when unknown */
    int64_t world_size;
    uint64_t input_events;   /* entries of the trace's event array, all phases (reader only) */
    uint64_t input_bytes;    /* bytes of JSON read (reader only) */
    uint64_t dropped_events; /* events the recorder could not keep (buffers full) */
    int partial;             /* the window closed early (shutdown, signal) */
    int64_t flight_step;     /* a flight recorder's save: the triggering step's number, else -1 */
    tp_str flight_reason;    /* ... and its reason (docs/FLIGHT.md) */
    int failed;              /* an allocation failed: the model is incomplete */
    /* A streamed window's segment (record/window.h): no later segment of its window holds an
     * event that starts before this time (INT64_MIN: nothing is settled; other models). */
    int64_t settled_ts;
    /* A piece of a window analysed in parts (src/sink/artifacts.c), other than its last: it
     * counts as no window, and its time runs to piece_end, where the next piece begins. */
    int piece;
    int64_t piece_end;
    /* A streamed window's segment: the ranges still open on its threads, outermost first per
     * thread (record/window.h). */
    tp_stacked_range *open;
    size_t nopen, cap_open;
} tp_model;

void tp_model_init(tp_model *m);
void tp_model_free(tp_model *m);

static inline tp_str tp_model_intern(tp_model *m, const char *s, size_t len) {
    return tp_strtab_intern(&m->strings, s, len);
}
tp_str tp_model_intern_cstr(tp_model *m, const char *s);
static inline const char *tp_model_str(const tp_model *m, tp_str id) {
    return tp_strtab_get(&m->strings, id);
}

/* The track of (pid, tid), added if new. A non-numeric pid or tid is passed as a string id with
 * the number 0; a numeric one with string id 0. Returns UINT32_MAX when out of memory. */
uint32_t tp_model_track(tp_model *m, int64_t pid, tp_str pid_str, int64_t tid, tp_str tid_str);

/* A new zeroed event at the end of events (NULL when out of memory; m->failed is set). The pointer
 * is valid until the next tp_model_add_event. */
tp_event *tp_model_add_event(tp_model *m);
/* tp_model_add_event with what every producer sets first: the event's track, kind (tp_kind),
 * start ts, name and category (TP_STR_EMPTY: none). */
tp_event *tp_model_new_event(tp_model *m, uint32_t track, int kind, int64_t ts, tp_str name,
                             tp_str cat);

/* Appends an arg to ev, which must be the event added last (args stay contiguous). 0 or -1. */
int tp_model_add_arg(tp_model *m, tp_event *ev, tp_str key, tp_arg_type type, const void *value);
int tp_model_arg_int(tp_model *m, tp_event *ev, const char *key, int64_t v);
int tp_model_arg_double(tp_model *m, tp_event *ev, const char *key, double v);
int tp_model_arg_str(tp_model *m, tp_event *ev, const char *key, const char *v);
int tp_model_arg_json(tp_model *m, tp_event *ev, const char *key, const char *json);

/* The arg of ev named key, or NULL. */
const tp_arg *tp_event_arg(const tp_model *m, const tp_event *ev, tp_str key);
/* A numeric arg (int or double) as a double; 0 when found, -1 when absent or not numeric. */
int tp_event_arg_number(const tp_model *m, const tp_event *ev, const char *key, double *out);
/* The whole duration of the range a last part stands for (TP_EVF_LAST_PART): its positive int arg
 * TP_PART_WHOLE_DUR (key: m's id of that name, UINT32_MAX when m has none), else the part's own
 * duration. */
static inline int64_t tp_part_whole_dur(const tp_model *m, const tp_event *e, tp_str key) {
    const tp_arg *a = key != UINT32_MAX ? tp_event_arg(m, e, key) : NULL;
    return a && a->type == TP_ARG_INT && a->v.i > 0 ? a->v.i : e->dur;
}

/* The device with this id, added if new (NULL when out of memory). */
tp_device *tp_model_device(tp_model *m, int64_t id);

/* The step number of a ProfilerStep#<n> name, or -1 when name is not one. */
int64_t tp_step_number(const char *name);

#endif
