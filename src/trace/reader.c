/* reader.c - the trace reader's driver: the input buffer and its refills, the top level of the
 * document, and the run facts it carries (devices, rank, base time, tprof's own object).
 *
 * Parsing goes by units: an event, a top-level member with its value, a token of a skipped
 * value. A unit is parsed from a buffer that holds it whole; when the data ends inside one, its
 * bytes move to the front of the buffer, more input follows them, and the unit is parsed again
 * from r->mark, where it began. Nothing reaches the model before its unit is complete, so the
 * retry is invisible; units are bounded (TP_READ_MAX_UNIT), everything else streams.
 *
 * Tolerated, as real traces need: the array form without its closing bracket, trailing commas,
 * unknown keys, phases and categories, bare words as values (N/A), raw control bytes other than
 * NUL and invalid UTF-8 in strings (kept as they are), integers beyond 64 bits (doubles in args),
 * a UTF-8 byte order mark. A raw NUL byte inside a string is an error (names are C strings: it
 * would cut them). Events whose ts is missing, whose ts or dur is not a number (NaN, null, a
 * string) or beyond ±2^62 ns, or whose duration is negative are left out and counted in one
 * warning. When a key comes twice in an event or its
 * args, the last value counts (as in Python's json module). Anything else malformed stops the
 * read with "PATH: byte N: problem". Metadata creates no tracks: process and thread names go to
 * the tracks of the model's events at the end of each read.
 *
 * Speed (docs/DESIGN.md asks 1 GB/s on one core): each buffer is indexed first (index.h); events go
 * through the fast path (fast.h) when they have a layout it knows, else through the general
 * scanner, and both give the same model (tests/unit/test_trace_reader_fast.c, the fuzz target). */
#include "trace/reader.h"

#include "trace/event.h"
#include "trace/input.h"
#include "trace/part.h"
#include "trace/perfetto_read.h"
#include "trace/parts.h"
#include "trace/scan.h"
#include "util/log.h"
#include "util/vec.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    TP_READ_BUF = 1 << 20,
    TP_READ_MIN = 256,
    TP_READ_MAX_UNIT = 128 << 20,
    TP_PROGRESS_MIN = 100 << 20, /* inputs smaller than this read too fast to need a line */
    TP_RESERVE_BYTES = 256,
};

enum state { ST_START, ST_OBJECT, ST_EVENTS, ST_SKIP, ST_AFTER, ST_DONE };

/* A device of deviceProperties while its members are read (its id may come last). */
typedef struct device_fields {
    int64_t id, mem, major, minor, sms;
    tp_jstr name;
} device_fields;

typedef struct reader {
    tp_scan sc;
    tp_part *pt;
    tp_read_facts *f; /* &pt->facts */
    const char *mark; /* where the unit being parsed began */
    int state;
    int first;        /* no item yet in the current object or array */
    size_t next_stop; /* pt->stops[next_stop] is the next place the part may end */
    uint64_t stop_at; /* its offset, UINT64_MAX when none is left */
    /* progress line: rewritten in place on a terminal, else one line per update */
    int progress, progress_tty, progress_shown;
    double next_progress;
    uint64_t charged; /* what this part added to its budget's use so far */
    uint64_t gz_cut;  /* 1 + the offset where an unfinished gzip trace was cut (0: none) */
} reader;

static int fail_at(reader *r, uint64_t offset, const char *msg) {
    if (r->gz_cut) { /* read on as an unfinished trace, and failed: the cut is the problem */
        offset = r->gz_cut - 1;
        msg = tp_input_error(r->pt->in);
    }
    snprintf(r->pt->err, sizeof(r->pt->err), "%s: byte %llu: %s", r->pt->name,
             (unsigned long long)offset, msg);
    return -1;
}

/* ---- top-level values ------------------------------------------------------------------- */

/* An integer value into *out (left as it is when the value is no integer); fact is the bit
 * of r->f->set that says it was written, 0 for none. */
static int int_value(reader *r, int64_t *out, unsigned fact) {
    tp_jnum n;
    int isnum;
    int rc = tp_scan_number(&r->sc, &n, &isnum);
    int64_t i;
    double d;
    if (!rc && isnum && tp_jnum_value(&r->sc, &n, &i, &d)) {
        *out = i;
        r->f->set |= fact;
    }
    return rc;
}

typedef int (*member_fn)(reader *r, const tp_jstr *key, void *ctx);

/* Calls fn on each member of the object at p (fn consumes the value); other values are
 * skipped. */
static int each_member(reader *r, member_fn fn, void *ctx) {
    tp_scan *sc = &r->sc;
    if (*sc->p != '{') return tp_scan_skip_value(sc);
    sc->p++;
    int first = 1, rc;
    tp_jstr key;
    while ((rc = tp_scan_member(sc, &first, &key)) == TP_SCAN_ITEM)
        if ((rc = fn(r, &key, ctx)) != TP_SCAN_OK) return rc;
    return rc;
}

static int device_member(reader *r, const tp_jstr *key, void *ctx) {
    device_fields *d = ctx;
    if (tp_scan_str_eq(&r->sc, key, "id")) return int_value(r, &d->id, 0);
    if (tp_scan_str_eq(&r->sc, key, "totalGlobalMem")) return int_value(r, &d->mem, 0);
    /* computeProperties (2021) says major, minor, multiProcessorCount. */
    if (tp_scan_str_eq(&r->sc, key, "computeMajor") || tp_scan_str_eq(&r->sc, key, "major"))
        return int_value(r, &d->major, 0);
    if (tp_scan_str_eq(&r->sc, key, "computeMinor") || tp_scan_str_eq(&r->sc, key, "minor"))
        return int_value(r, &d->minor, 0);
    if (tp_scan_str_eq(&r->sc, key, "numSms") || tp_scan_str_eq(&r->sc, key, "multiProcessorCount"))
        return int_value(r, &d->sms, 0);
    if (tp_scan_str_eq(&r->sc, key, "name") && *r->sc.p == '"')
        return tp_scan_string(&r->sc, &d->name);
    return tp_scan_skip_value(&r->sc);
}

/* deviceProperties: each device replaces the model's device of the same id, so a retried unit
 * adds nothing twice. A device without an id takes its index. */
static int devices(reader *r) {
    tp_scan *sc = &r->sc;
    if (*sc->p != '[') return tp_scan_skip_value(sc);
    sc->p++;
    int first = 1, rc;
    for (int64_t index = 0; (rc = tp_scan_element(sc, &first)) == TP_SCAN_ITEM; index++) {
        device_fields f = {.id = index};
        if (*sc->p != '{') {
            if ((rc = tp_scan_skip_value(sc)) != TP_SCAN_OK) return rc;
            continue;
        }
        if ((rc = each_member(r, device_member, &f)) != TP_SCAN_OK) return rc;
        tp_device *d = tp_model_device(r->pt->m, f.id);
        if (!d) continue;
        size_t n;
        const char *name = f.name.s ? tp_scan_text(sc, &f.name, &n) : "";
        d->name = tp_model_intern(r->pt->m, name, f.name.s ? n : 0);
        d->total_mem = f.mem > 0 ? (uint64_t)f.mem : 0;
        d->compute_major = (int)f.major;
        d->compute_minor = (int)f.minor;
        d->num_sms = (int)f.sms;
    }
    return rc;
}

static int dist_member(reader *r, const tp_jstr *key, void *ctx) {
    (void)ctx;
    if (tp_scan_str_eq(&r->sc, key, "rank")) return int_value(r, &r->f->rank, TP_FACT_RANK);
    if (tp_scan_str_eq(&r->sc, key, "world_size"))
        return int_value(r, &r->f->world_size, TP_FACT_WORLD);
    return tp_scan_skip_value(&r->sc);
}

/* "flight": {"reason": "...", "step": n}, a flight recorder's save (docs/FLIGHT.md). The
 * reason is kept as text, cut to the facts' buffer, and interned when the facts are applied:
 * a part's model is not the one the facts end in. */
static int flight_member(reader *r, const tp_jstr *key, void *ctx) {
    (void)ctx;
    tp_scan *sc = &r->sc;
    if (tp_scan_str_eq(sc, key, "step")) return int_value(r, &r->f->flight_step, TP_FACT_FLIGHT);
    if (tp_scan_str_eq(sc, key, "reason") && *sc->p == '"') {
        tp_jstr s;
        int rc = tp_scan_string(sc, &s);
        size_t n;
        const char *text = rc == TP_SCAN_OK ? tp_scan_text(sc, &s, &n) : NULL;
        if (text) {
            n = n < sizeof(r->f->flight_reason) - 1 ? n : sizeof(r->f->flight_reason) - 1;
            memcpy(r->f->flight_reason, text, n);
            r->f->flight_reason[n] = '\0';
        }
        return rc;
    }
    return tp_scan_skip_value(sc);
}

static int tprof_member(reader *r, const tp_jstr *key, void *ctx) {
    (void)ctx;
    tp_scan *sc = &r->sc;
    if (tp_scan_str_eq(&r->sc, key, "dropped_events")) {
        int64_t n = 0;
        int rc = int_value(r, &n, 0);
        r->f->dropped = n > 0 ? (uint64_t)n : 0;
        r->f->set |= TP_FACT_DROPPED;
        return rc;
    }
    if (tp_scan_str_eq(&r->sc, key, "partial")) {
        const char *v = sc->p;
        int rc = tp_scan_skip_value(sc);
        r->f->partial = sc->p - v == 4 && memcmp(v, "true", 4) == 0;
        r->f->set |= TP_FACT_PARTIAL;
        return rc;
    }
    if (tp_scan_str_eq(&r->sc, key, "flight")) return each_member(r, flight_member, NULL);
    if (tp_scan_str_eq(&r->sc, key, "rank"))
        return int_value(r, &r->f->tprof_rank, TP_FACT_TPROF_RANK);
    if (tp_scan_str_eq(&r->sc, key, "world_size"))
        return int_value(r, &r->f->tprof_world_size, TP_FACT_TPROF_WORLD);
    return tp_scan_skip_value(sc);
}

static int base_time(reader *r) {
    tp_jnum n;
    int isnum;
    int rc = tp_scan_number(&r->sc, &n, &isnum);
    if (!rc && isnum) {
        if (tp_jnum_scaled(&n, 0, TP_TIME_LIMIT, &r->f->base_ns) != 0) r->f->base_ns = 0;
        r->f->set |= TP_FACT_BASE;
    }
    return rc;
}

/* The value of a top-level member. traceEvents opens the event array; a value nobody needs is
 * skipped token by token (ST_SKIP), so it may be of any size. */
static int top_member(reader *r, const tp_jstr *key) {
    tp_scan *sc = &r->sc;
    if (tp_scan_str_eq(&r->sc, key, "traceEvents") && *sc->p == '[') {
        sc->p++;
        r->f->events_member = 1;
        r->state = ST_EVENTS;
        r->first = 1;
        return TP_SCAN_OK;
    }
    if (tp_scan_str_eq(&r->sc, key, "deviceProperties") ||
        tp_scan_str_eq(&r->sc, key, "computeProperties"))
        return devices(r);
    if (tp_scan_str_eq(&r->sc, key, "distributedInfo")) return each_member(r, dist_member, NULL);
    if (tp_scan_str_eq(&r->sc, key, "baseTimeNanoseconds")) return base_time(r);
    if (tp_scan_str_eq(&r->sc, key, "tprof")) return each_member(r, tprof_member, NULL);
    r->state = ST_SKIP;
    sc->depth = 0;
    return TP_SCAN_OK;
}

/* ---- the states ------------------------------------------------------------------------- */

static int open_document(reader *r) {
    tp_scan *sc = &r->sc;
    static const char bom[] = "\xef\xbb\xbf";
    if (sc->origin == 0 && sc->p == sc->buf && (unsigned char)*sc->p == 0xef) {
        if (sc->end - sc->p < 3 && !sc->eof) return TP_SCAN_MORE;
        if (sc->end - sc->p >= 3 && memcmp(sc->p, bom, 3) == 0) sc->p += 3;
    }
    tp_scan_ws(sc);
    if (sc->p == sc->end) return TP_SCAN_MORE;
    if (*sc->p == '{') {
        r->state = ST_OBJECT;
    } else if (*sc->p == '[') {
        r->state = ST_EVENTS;
        r->f->array_form = 1;
    } else {
        return tp_scan_fail(sc, sc->p, "not a JSON trace: expected '{' or '['");
    }
    sc->p++;
    r->first = 1;
    return TP_SCAN_OK;
}

static int object(reader *r) {
    tp_scan *sc = &r->sc;
    int first = r->first;
    tp_jstr key;
    int rc = tp_scan_member(sc, &first, &key);
    if (rc == TP_SCAN_OK) r->state = ST_AFTER;
    if (rc != TP_SCAN_ITEM) return rc;
    /* A member follows the first one from now on, unless the retry starts before it. */
    int before = r->first;
    r->first = 0;
    rc = top_member(r, &key);
    if (rc != TP_SCAN_OK) r->first = before;
    return rc;
}

/* Whether the entry at offset at is the next stop of the part; the stops passed on the way
 * (boundaries that were no boundaries: inside a string, another part's guess) are skipped. */
static int at_stop(reader *r, uint64_t at) {
    const tp_part *pt = r->pt;
    while (r->next_stop < pt->nstops && pt->stops[r->next_stop] < at)
        r->next_stop++;
    r->stop_at = r->next_stop < pt->nstops ? pt->stops[r->next_stop] : UINT64_MAX;
    if (r->stop_at != at) return 0;
    r->pt->stopped = r->next_stop + 1;
    return 1;
}

/* The hot loop: one unit per event, committed as soon as it is read. */
static int events(reader *r) {
    tp_scan *sc = &r->sc;
    for (;;) {
        tp_scan_ws(sc);
        if (sc->p == sc->end && sc->eof && r->f->array_form) {
            r->state = ST_DONE; /* the array form may end without its ']' */
            return TP_SCAN_OK;
        }
        int first = r->first;
        int rc = tp_scan_element(sc, &first);
        if (rc == TP_SCAN_MORE && sc->eof && r->f->array_form) {
            r->state = ST_DONE; /* ... or with a trailing comma */
            return TP_SCAN_OK;
        }
        if (rc == TP_SCAN_OK) {
            r->state = r->f->array_form ? ST_AFTER : ST_OBJECT;
            r->first = 0;
            return rc;
        }
        if (rc != TP_SCAN_ITEM) return rc;
        if (tp_scan_offset(sc, sc->p) >= r->stop_at && at_stop(r, tp_scan_offset(sc, sc->p))) {
            r->state = ST_DONE; /* the next part begins here */
            return TP_SCAN_OK;
        }
        rc = *sc->p == '{' ? tp_evread_event(&r->pt->ev) : tp_scan_skip_value(sc);
        if (rc != TP_SCAN_OK) return rc;
        r->first = 0;
        r->f->events_in++;
        r->mark = sc->p;
    }
}

static int document_end(reader *r) {
    tp_scan *sc = &r->sc;
    tp_scan_ws(sc);
    if (sc->p < sc->end) return tp_scan_fail(sc, sc->p, "unexpected data after the trace");
    if (!sc->eof) return TP_SCAN_MORE;
    r->state = ST_DONE;
    return TP_SCAN_OK;
}

static int step(reader *r) {
    int rc;
    switch (r->state) {
    case ST_START:
        rc = open_document(r);
        break;
    case ST_OBJECT:
        rc = object(r);
        break;
    case ST_EVENTS:
        rc = events(r);
        break;
    case ST_SKIP:
        rc = tp_scan_skip(&r->sc, &r->mark);
        if (rc == TP_SCAN_OK) r->state = ST_OBJECT;
        break;
    case ST_AFTER:
        rc = document_end(r);
        break;
    default:
        return TP_SCAN_OK;
    }
    if (rc == TP_SCAN_OK) r->mark = r->sc.p;
    return rc;
}

/* ---- input ------------------------------------------------------------------------------ */

/* The bytes of the input read so far: the part's own, or with peers every part's, each counted
 * up to the next part's start (a part reads on to find its stop). A peer's input counts from
 * the file's start (a file) or from its own start (memory, its size then the rest of the
 * input): pos + (the whole size - its size) is the offset either way. */
static uint64_t bytes_read(const tp_part *p, uint64_t *size) {
    uint64_t pos;
    tp_input_progress(p->in, &pos, size);
    if (!p->peers) return pos;
    assert(p->start == 0 && p->nstops > 0);
    uint64_t sum = pos < p->stops[0] ? pos : p->stops[0];
    for (size_t i = 0; i < p->nstops; i++) {
        uint64_t at, its_size, end = i + 1 < p->nstops ? p->stops[i + 1] : *size;
        tp_input_progress(p->peers[i], &at, &its_size);
        at += *size - its_size;
        assert(at >= p->stops[i]);
        sum += (at < end ? at : end) - p->stops[i];
    }
    return sum;
}

static void progress(reader *r) {
    uint64_t size, pos = bytes_read(r->pt, &size);
    if ((size ? size : pos) < TP_PROGRESS_MIN) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double t = (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
    if (t < r->next_progress) return;
    r->next_progress = t + 0.25;
    const char *start = r->progress_tty ? "\r" : "", *end = r->progress_tty ? "" : "\n";
    if (size)
        fprintf(stderr, "%stprof: reading %s: %3d%% of %llu MB%s", start, r->pt->name,
                (int)(pos * 100 / size), (unsigned long long)(size >> 20), end);
    else
        fprintf(stderr, "%stprof: reading %s: %llu MB%s", start, r->pt->name,
                (unsigned long long)(pos >> 20), end);
    r->progress_shown = 1;
}

uint64_t tp_read_memory_estimate(const tp_model *m) {
    return (uint64_t)m->cap_events * sizeof(tp_event) + (uint64_t)m->cap_args * sizeof(tp_arg) +
           (uint64_t)m->cap_tracks * sizeof(tp_track) +
           (uint64_t)m->strings.cap * (sizeof(struct tp_strent) + 2 * sizeof(uint32_t)) +
           m->strings.bytes + (uint64_t)m->nevents * TP_READ_ANALYSIS_EVENT_BYTES;
}

/* Once per buffer: a failed allocation stops the read at once (every later event would retry
 * a realloc of the whole array, for minutes), and so does the memory budget. */
static int check_memory(reader *r, uint64_t at) {
    const tp_model *m = r->pt->m;
    if (m->failed || m->strings.failed) return fail_at(r, at, "out of memory");
    tp_read_budget *b = r->pt->budget;
    if (!b || !b->max) return 0;
    uint64_t now = tp_read_memory_estimate(m);
    uint64_t used = __atomic_add_fetch(&b->used, now - r->charged, __ATOMIC_RELAXED);
    r->charged = now;
    if (used <= b->max) return 0;
    char msg[200];
    snprintf(msg, sizeof(msg),
             "over the memory budget: its events need more than --max-memory %llu MB (about "
             "%llu MB after %llu events; raise --max-memory, or give fewer windows)",
             (unsigned long long)(b->max >> 20), (unsigned long long)(used >> 20),
             (unsigned long long)m->nevents);
    return fail_at(r, at, msg);
}

/* Moves the unit that began at mark to the front of the buffer and fills the rest. A unit
 * longer than half the buffer doubles it, so a long unit is parsed again only a few times. */
static int refill(reader *r) {
    tp_scan *sc = &r->sc;
    if (check_memory(r, tp_scan_offset(sc, r->mark))) return -1;
    size_t off = (size_t)(r->mark - sc->buf), keep = (size_t)(sc->end - r->mark);
    if (keep > sc->cap / 2) {
        if (keep == sc->cap && sc->cap >= TP_READ_MAX_UNIT)
            return fail_at(r, tp_scan_offset(sc, r->mark), "a single value longer than 128 MB");
        if (sc->cap < TP_READ_MAX_UNIT) {
            uint64_t at = tp_scan_offset(sc, r->mark);
            if (tp_scan_reserve(sc, sc->cap * 2)) return fail_at(r, at, "out of memory");
        }
    }
    memmove(sc->buf, sc->buf + off, keep); /* (the buffer may have moved: off, not mark) */
    sc->origin += off;
    size_t len = keep;
    while (len < sc->cap) {
        ptrdiff_t n = tp_input_read(r->pt->in, sc->buf + len, sc->cap - len);
        /* an unfinished gzip trace cut inside a member ends there: its whole events count */
        if (n < 0 && !(r->pt->cut_short_ok && tp_input_cut_short(r->pt->in)))
            return fail_at(r, sc->origin + len, tp_input_error(r->pt->in));
        if (n < 0) r->gz_cut = 1 + sc->origin + len;
        if (n <= 0) {
            sc->eof = 1;
            break;
        }
        len += (size_t)n;
    }
    tp_scan_set_data(sc, len);
    sc->p = r->mark = sc->buf;
    if (r->progress) progress(r);
    return 0;
}

static int fail_end(reader *r) {
    tp_scan *sc = &r->sc;
    uint64_t end = tp_scan_offset(sc, sc->end);
    if (r->state == ST_START) return fail_at(r, end, "empty input: no JSON trace");
    if (r->state == ST_EVENTS && r->pt->cut_short_ok) { /* the events before it are whole */
        r->pt->cut_short = 1;
        r->f->partial = 1;
        r->f->set |= TP_FACT_PARTIAL;
        r->state = ST_DONE;
        return 0;
    }
    if (r->state == ST_EVENTS && *r->mark != ']') {
        const char *p = r->mark;
        while (tp_scan_class[(unsigned char)*p] & TP_CC_WS || *p == ',')
            p++;
        if (p < sc->end) {
            char msg[96];
            snprintf(msg, sizeof(msg), "unexpected end of input inside the event at byte %llu",
                     (unsigned long long)tp_scan_offset(sc, p));
            return fail_at(r, end, msg);
        }
    }
    return fail_at(r, end, "unexpected end of input (the trace is cut short)");
}

/* ---- the run facts and the end of a read ---------------------------------------------- */

static int64_t sat_add(int64_t a, int64_t b) {
    int64_t s;
    if (!__builtin_add_overflow(a, b, &s)) return s;
    return b > 0 ? INT64_MAX : INT64_MIN;
}

/* A model's events share one base: the first read sets it, later reads move their events onto
 * it, so several files (ranks) read into one model keep their relative times. */
static void apply_facts(tp_part *p, size_t first_event) {
    tp_model *m = p->m;
    const tp_read_facts *f = &p->facts;
    if (first_event == 0) {
        m->base_ns = f->base_ns;
    } else if (f->base_ns != m->base_ns) {
        int64_t shift = sat_add(f->base_ns, -m->base_ns);
        for (size_t i = first_event; i < m->nevents; i++)
            m->events[i].ts = sat_add(m->events[i].ts, shift);
    }
    if (f->rank >= 0 || f->tprof_rank >= 0) m->rank = f->rank >= 0 ? f->rank : f->tprof_rank;
    if (f->world_size >= 0 || f->tprof_world_size >= 0)
        m->world_size = f->world_size >= 0 ? f->world_size : f->tprof_world_size;
    m->dropped_events += f->dropped;
    m->partial |= f->partial;
    if (f->flight_step >= 0) {
        m->flight_step = f->flight_step;
        m->flight_reason = tp_model_intern_cstr(m, f->flight_reason);
    }
    m->input_events += f->events_in;
    m->input_bytes += p->end;
    tp_evread_finish(&p->ev);
    if (p->ev.bad_time)
        tp_log_warn("%s: %llu events left out: ts missing, ts or dur not a number or out of range "
                    "(the first at byte %llu)",
                    p->name, (unsigned long long)p->ev.bad_time,
                    (unsigned long long)p->ev.bad_time_at);
}

/* Valid JSON that is no trace ({"foo": 1}, a compile_commands.json) is an error, not an empty
 * report: a trace is an object with a "traceEvents" array, or an array; and when that array has
 * entries, at least one is an event (an object with "ph"). {"traceEvents": []} and [] are
 * traces, empty ones. */
static int check_is_trace(tp_part *p) {
    const char *why = NULL;
    if (!p->facts.array_form && !p->facts.events_member)
        why = "not a valid trace: no \"traceEvents\" array";
    else if (p->facts.events_in && !p->ev.with_phase)
        why = "not a valid trace: no entry is a trace event (an object with \"ph\")";
    if (!why) return 0;
    snprintf(p->err, sizeof(p->err), "%s: byte 0: %s", p->name, why);
    return -1;
}

int tp_part_finish(tp_part *p, size_t first_event) {
    int rc = p->rc;
    if (rc == 0) rc = check_is_trace(p);
    apply_facts(p, first_event);
    return rc;
}

void tp_part_free(tp_part *p) {
    tp_evread_free(&p->ev);
}

/* ---- a part ----------------------------------------------------------------------------- */

static void part_begin(reader *r, tp_part *p) {
    memset(r, 0, sizeof(*r));
    r->pt = p;
    r->f = &p->facts;
    p->rc = 0;
    p->err[0] = '\0';
    p->stopped = 0;
    memset(&p->facts, 0, sizeof(p->facts));
    p->facts.rank = p->facts.world_size = p->facts.tprof_rank = p->facts.tprof_world_size =
        p->facts.flight_step = -1;
    r->progress_tty = isatty(STDERR_FILENO);
    r->progress = p->progress > 1 || (p->progress == 1 && r->progress_tty);
    r->stop_at = p->nstops ? p->stops[0] : UINT64_MAX;
    if (p->form != TP_FORM_UNKNOWN) { /* a later part: it begins at an entry of the events */
        r->state = ST_EVENTS;
        r->first = 1;
        p->facts.array_form = p->form == TP_FORM_ARRAY;
        p->facts.events_member = !p->facts.array_form;
    }
}

/* Room for the events of a part of known size, reserved once (pages are touched only as events
 * fill them) instead of grown by copies: an event for every TP_RESERVE_BYTES of JSON covers
 * profilers' traces (Kineto writes 250-400 bytes per event kept); more grow as usual. */
static void reserve_events(tp_part *p) {
    uint64_t pos, size;
    tp_input_progress(p->in, &pos, &size);
    uint64_t end = p->nstops ? p->stops[0] : size;
    if (end <= p->start) return;
    size_t want = (size_t)((end - p->start) / TP_RESERVE_BYTES);
    if (TP_GROW(p->m->events, p->m->cap_events, p->m->nevents + want)) return; /* grow later */
}

void tp_part_read(tp_part *p) {
    assert(p->form != TP_FORM_UNKNOWN || p->start == 0);
    reader r;
    part_begin(&r, p);
    reserve_events(p);
    tp_scan_init(&r.sc);
    tp_evread_init(&p->ev, p->m, &r.sc);
    p->ev.keep_args = p->keep_args;
    p->ev.raw_left = TP_READ_RAW_ARGS_MAX;
    int rc = 0;
    if (tp_scan_reserve(&r.sc, p->cap)) {
        rc = fail_at(&r, p->start, "out of memory");
    } else {
        r.sc.origin = p->start;
        tp_scan_set_data(&r.sc, 0);
        r.sc.p = r.mark = r.sc.buf;
    }
    while (rc == 0 && r.state != ST_DONE) {
        int s = step(&r);
        if (s == TP_SCAN_ERR)
            rc = fail_at(&r, tp_scan_offset(&r.sc, r.sc.err_at), r.sc.err_msg);
        else if (s == TP_SCAN_MORE)
            rc = r.sc.eof ? fail_end(&r) : refill(&r);
    }
    if (rc == 0) rc = check_memory(&r, tp_scan_offset(&r.sc, r.sc.end));
    if (r.progress_shown && r.progress_tty) fputs("\r\033[K", stderr);
    p->rc = rc;
    p->end = r.sc.buf ? tp_scan_offset(&r.sc, r.sc.end) : p->start;
    p->ev.sc = NULL; /* the scanner ends here; the names wait for tp_part_finish */
    tp_scan_free(&r.sc);
}

/* ---- the entry points ------------------------------------------------------------------- */

/* The one-thread read. cap: the buffer's first size; it doubles for a unit longer than half
 * of it. */
static int read_input(tp_input *in, const char *name, tp_model *m, const tp_read_opts *o,
                      size_t cap, char *err, size_t errlen) {
    tp_part p;
    memset(&p, 0, sizeof(p));
    tp_read_budget budget = {.max = o ? o->max_memory : 0, .used = o ? o->memory_used : 0};
    p.budget = &budget;
    p.in = in;
    p.name = name;
    p.m = m;
    p.progress = o ? o->progress : 0;
    p.keep_args = o ? o->keep_args : 0;
    p.cut_short_ok = o ? o->cut_short_ok : 0;
    p.cap = cap;
    size_t first_event = m->nevents;
    tp_part_read(&p);
    int rc = tp_part_finish(&p, first_event);
    if (rc && err && errlen) snprintf(err, errlen, "%s", p.err);
    if (o && o->cut_short) *o->cut_short = p.cut_short;
    tp_part_free(&p);
    return rc;
}

/* 1 when the file at path begins as a Perfetto protobuf trace (standard input is JSON). */
static int is_perfetto(const char *path) {
    unsigned char head[16];
    FILE *f = strcmp(path, "-") == 0 ? NULL : fopen(path, "rbe");
    if (!f) return 0;
    size_t n = fread(head, 1, sizeof(head), f);
    fclose(f);
    return tp_perfetto_sniff(head, n);
}

int tp_trace_read_file(const char *path, tp_model *m, const tp_read_opts *o, char *err,
                       size_t errlen) {
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : o && o->name ? o->name : path;
    char why[256];
    tp_input *in = tp_input_open(path, why, sizeof(why));
    if (!in) {
        if (err && errlen) snprintf(err, errlen, "%s: %s", name, why);
        return -1;
    }
    if (is_perfetto(path)) {
        int rc = tp_perfetto_read_input(in, name, m, o, err, errlen);
        tp_input_close(in);
        return rc;
    }
    tp_split_src src = {.path = path, .cap = TP_READ_BUF};
    int rc = tp_parts_read(&src, in, name, m, o, err, errlen);
    if (rc == TP_PARTS_DECLINED) rc = read_input(in, name, m, o, TP_READ_BUF, err, errlen);
    tp_input_close(in);
    return rc;
}

/* A quarter of the input, so small inputs (tests, the fuzzer) go through refills too. */
static size_t mem_cap(size_t len) {
    return len / 4 < TP_READ_MIN ? TP_READ_MIN : len / 4 > TP_READ_BUF ? TP_READ_BUF : len / 4;
}

int tp_trace_read_mem_opts(const void *data, size_t len, const char *name, tp_model *m,
                           const tp_read_opts *o, char *err, size_t errlen) {
    if (!name) name = "<memory>";
    if (tp_perfetto_sniff(data, len < 16 ? len : 16))
        return tp_perfetto_read_mem(data, len, name, m, o, err, errlen);
    tp_input *in = tp_input_mem(data, len);
    if (!in) {
        if (err && errlen) snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    tp_split_src src = {.mem = data, .cap = mem_cap(len)};
    int rc = o ? tp_parts_read(&src, in, name, m, o, err, errlen) : TP_PARTS_DECLINED;
    if (rc == TP_PARTS_DECLINED) rc = read_input(in, name, m, o, mem_cap(len), err, errlen);
    tp_input_close(in);
    return rc;
}

int tp_trace_read_mem(const void *data, size_t len, const char *name, tp_model *m, char *err,
                      size_t errlen) {
    return tp_trace_read_mem_opts(data, len, name, m, NULL, err, errlen);
}
