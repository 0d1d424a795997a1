/* event.h - one trace event object, from its JSON to the model (docs/SEMANTICS.md §2).
 *
 * Owns what lives across the events of one read: the open "B" ranges of each thread, the kind
 * each category maps to, the process and thread names that wait for the end of the input (their
 * tracks may come later), the count of events left out for a bad time, and what makes the next
 * event cheaper: the layout the fast path learned, the name cache, the last track and how its
 * ids were written. An event touches the model only after its closing brace, so a parse cut
 * short by the end of the buffer can start over from the event's first byte. */
#ifndef TP_TRACE_EVENT_H
#define TP_TRACE_EVENT_H

#include "model/model.h"
#include "trace/layout.h"
#include "trace/names.h"
#include "trace/scan.h"

/* Times beyond ±2^62 ns (146 years) are refused, so ts + dur never overflows in an analysis. */
#define TP_TIME_LIMIT ((int64_t)1 << 62)

/* A numeric arg converted out of the buffer (B ranges outlive it). */
typedef struct tp_num_arg {
    int type; /* -1 none, else tp_arg_type TP_ARG_INT or TP_ARG_DOUBLE */
    union {
        int64_t i;
        double d;
    } v;
} tp_num_arg;

/* A range being built: an X event, a B waiting for its E, or a slice of a Perfetto trace
 * (perfetto_read.c): what the reader keeps of its args, before the range is added. */
typedef struct tp_open_range {
    int64_t ts;
    tp_str name, cat;
    uint64_t corr;
    tp_num_arg flops;
    tp_num_arg fcm;            /* FlopCounterMode's FLOPs, from the shapes (model/flops.h) */
    tp_num_arg seq, async;     /* a collective's, for the cross-rank analysis (analysis/ranks.h) */
    uint32_t ext;              /* "External id" (tp_event.ext) */
    tp_num_arg seqnr, fwd_tid; /* autograd's link from an op to its backward (analysis/modules.h) */
    tp_str coll_name;
    tp_str dims;  /* "Input Dims" as written (an array's raw JSON), TP_STR_EMPTY when absent */
    tp_str itype; /* "Input type" likewise */
    tp_str setup; /* "tprof.setup", TP_STR_EMPTY when absent */
    tp_str raw;   /* the whole args object as written (tp_evread.keep_args), TP_STR_EMPTY none */
} tp_open_range;

/* A pid or tid as last written. */
struct tp_id_text {
    uint32_t len; /* UINT32_MAX: too long to keep */
    int string;
    char text[32];
};

enum { TP_TRACKS_SEEN = 4 };

/* A track and its ids as written (track UINT32_MAX: the entry is empty). */
struct tp_track_seen {
    struct tp_id_text pid, tid;
    uint32_t track;
};

typedef struct tp_evread {
    tp_model *m;
    tp_scan *sc;
    struct tp_range_stack *stacks; /* by track id: the open B ranges, innermost last */
    size_t cap_stacks;
    uint8_t *cat_kind; /* by string id: tp_kind of that category, 0 not yet known */
    size_t cap_cat_kind;
    uint8_t *name_step; /* by string id: its name_class (event.c), 0 not yet known */
    size_t cap_name_step;
    tp_names name_cache; /* in front of the model's strings */
    struct tp_pending_name *names;
    size_t nnames, cap_names;
    struct tp_counter_arg *cargs; /* the numeric args of the counter being read */
    size_t ncargs, cap_cargs;
    tp_str k_flops, k_mem[5];           /* interned arg keys */
    tp_str k_seq, k_async, k_coll_name; /* a collective's args (analysis/ranks.h) */
    tp_str k_fcm;                       /* "flops_fcm", interned as k_dims is */
    tp_str k_itype, k_setup;            /* "Input type", "tprof.setup": interned as k_dims is */
    tp_str k_seqnr, k_fwd_tid; /* "Sequence number", "Fwd thread id": likewise, with the first */
    tp_str k_dims; /* "Input Dims", interned with the first op that has shapes (else 0: a model
                      without shapes holds no such key, which the analysis relies on) */
    /* The last few (pid, tid) as written, and their tracks: events mostly come from a few
     * threads and streams at a time, each writing its ids the same way. */
    struct tp_track_seen seen[TP_TRACKS_SEEN];
    unsigned seen_last, seen_next; /* the latest hit; where the next track goes */
    tp_layout layout;              /* of the events and args read so far (the fast path's) */
    uint64_t bad_time;    /* events left out: ts missing, ts or dur not a number, out of range,
                             or a negative duration */
    uint64_t bad_time_at; /* input offset of the first */
    const char *nul_at;   /* a raw NUL inside a string of the current event, or NULL */
    uint64_t with_phase;  /* objects read with a "ph" member: without any, no trace */
    uint64_t orphan_ends; /* E events with no B open on their thread (ignored) */
    int keep_args;        /* tp_read_opts.keep_args: each range's args object as one more arg */
    size_t raw_left;      /* bytes of args objects it may still keep (TP_READ_RAW_ARGS_MAX) */
    tp_str k_raw;         /* TP_READ_RAW_ARGS, interned with the first */
} tp_evread;

/* 0 sends every event through the general path (tests compare the two paths). */
extern int tp_evread_fast;

/* 1 when s[0..n) is a decimal integer ("25738", "-1") that fits an int64, into *out: how a pid or
 * tid written as a string is read (docs/SEMANTICS.md §2), and a Perfetto annotation's text. */
int tp_evread_decimal(const char *s, size_t n, int64_t *out);

void tp_evread_init(tp_evread *er, tp_model *m, tp_scan *sc);
/* Parses the object at sc->p (its '{') and adds what it means to the model: TP_SCAN_OK,
 * TP_SCAN_MORE (nothing was added) or TP_SCAN_ERR. The fast path (fast.h) reads it when it
 * can, the general path otherwise. */
int tp_evread_event(tp_evread *er);
/* Gives the process and thread names read so far to the tracks of the model. */
void tp_evread_finish(tp_evread *er);
void tp_evread_free(tp_evread *er);
/* The range r, dur long, on track, as the reader keeps it (docs/SEMANTICS.md §2): its kind by
 * category, the step flag by name, the args it kept; NULL when left out (category Trace, the
 * dataloader's copy for TensorBoard) or out of memory (m->failed). The event is the model's
 * last. */
tp_event *tp_evread_add_range(tp_evread *er, uint32_t track, const tp_open_range *r, int64_t dur);
/* An op's FLOPs by its input shapes (model/flops.h) where its trace has none: torch.profiler's
 * (fcm 0) or FlopCounterMode's (fcm 1), from the texts of its "Input Dims" and "Concrete Inputs"
 * arrays (conc may be NULL); an int arg when the formula gives a positive count, else none. */
tp_num_arg tp_evread_shape_flops(tp_evread *er, tp_str name, const char *dims, size_t dims_len,
                                 const char *conc, size_t conc_len, int fcm);
/* B ranges still waiting for their E. */
size_t tp_evread_open_ranges(const tp_evread *er);
/* Appends the process and thread names src read (into another model) to dst's; map turns
 * src's string ids into dst's. 0, or -1 when out of memory. */
int tp_evread_adopt_names(tp_evread *dst, const tp_evread *src, const tp_str *map);

#endif
