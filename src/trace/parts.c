/* parts.c - the parallel reader: a plain JSON trace read by several threads at once.
 *
 * The cut: the input is divided into equal shares, and each cut moves forward to the next place
 * that looks like the start of an entry of the events array: '}' ',' '{' with only whitespace
 * between (a candidate, found by reading a few kilobytes there: no pass over the whole input).
 * Part 0 reads from the document's start on the calling thread, part k from candidate k on a
 * thread of its own and into a model of its own; every part ends at the first candidate after
 * its start that it meets as the start of an entry (reader.c, at_stop), or at the document's end.
 *
 * Why the result is the one-thread read, byte for byte: a candidate may lie inside a string or
 * outside the events array, and a part started there reads nonsense. But part 0 starts at the
 * true start; a part that starts at a true entry reads exactly what one thread reads from there,
 * and it stops only at a candidate it met as an entry: a true one. So the chain part 0 -> the
 * part whose start it stopped at -> ... -> the part that read to the end holds true parts only,
 * in file order, covering the input; the parts off the chain are thrown away. A false candidate
 * costs time (the part before it reads on to the next), never a difference.
 *
 * The merge carries across the boundaries what one read carries: strings, tracks and devices
 * are added to the first model in each part's order of first use (so their ids come out as one
 * read makes them), with the pending process and thread names, the counts and the top-level
 * facts, part after part on one thread (tables of a few thousand entries); then every part's
 * events and args, whose slices of the first model are known by then, are remapped into them
 * by all the threads at once (millions of entries: done on one thread it held two threads near
 * 1.5x). A B range whose E lies in a later part cannot be matched
 * after the fact: when a part of the chain leaves B ranges open, or a later one meets an E with
 * none open, the input is read again by one thread (rare: Kineto and tprof write X events).
 *
 * Errors: the first part of the chain that failed gives the message, with absolute offsets, as
 * the one-thread read would have. */
#include "trace/parts.h"

#include "trace/part.h"
#include "util/vec.h"

#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    TP_PARTS_MAX = 64,
    TP_PART_MIN = 16 << 20,    /* smaller shares are read faster than threads start */
    TP_SEEK_WINDOW = 64 << 10, /* bytes read at a time while looking for a candidate */
    TP_SEEK_LIMIT = 64 << 20,  /* no candidate this far from the cut: no cut there */
    TP_SEEK_BACK = 256,        /* whitespace looked at before a '{' */
};

/* ---- the cut ------------------------------------------------------------------------------ */

static int available_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static int is_ws(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The index in w[0..n) of a '{' that follows '}' ',' with only whitespace between, looking at
 * the '{'s from index from on; -1 when none. */
static ptrdiff_t candidate_in(const char *w, size_t n, size_t from) {
    for (const char *q = w + from; (q = memchr(q, '{', (size_t)(w + n - q))) != NULL; q++) {
        const char *b = q;
        while (b > w && is_ws(b[-1]))
            b--;
        if (b == w || b[-1] != ',') continue;
        b--;
        while (b > w && is_ws(b[-1]))
            b--;
        if (b > w && b[-1] == '}') return q - w;
    }
    return -1;
}

/* The first candidate at or after offset from: its offset, or 0 (never a candidate). */
static uint64_t candidate_after(const tp_split_src *src, int fd, uint64_t size, uint64_t from) {
    uint64_t back = from < TP_SEEK_BACK ? from : TP_SEEK_BACK;
    uint64_t limit = size - from < TP_SEEK_LIMIT ? size : from + TP_SEEK_LIMIT;
    if (src->mem) {
        const char *w = (const char *)src->mem + from - back;
        ptrdiff_t i = candidate_in(w, (size_t)(limit - from + back), (size_t)back);
        return i < 0 ? 0 : from - back + (uint64_t)i;
    }
    char *w = malloc(TP_SEEK_WINDOW);
    uint64_t found = 0;
    for (uint64_t at = from - back; !found && w && at + back < limit; at += TP_SEEK_WINDOW - back) {
        ssize_t n = pread(fd, w, TP_SEEK_WINDOW, (off_t)at);
        if (n <= (ssize_t)back) break;
        ptrdiff_t i = candidate_in(w, (size_t)n, (size_t)back);
        if (i >= 0) found = at + (uint64_t)i;
        back = TP_SEEK_BACK;
    }
    free(w);
    return found;
}

/* The candidates: the first after each cut (equal shares, or the test's cuts), ascending and
 * distinct. */
static size_t choose_stops(const tp_split_src *src, uint64_t size, const uint64_t *cuts_at,
                           size_t ncuts, int parts, uint64_t *stops) {
    size_t n = 0;
    int fd = src->mem ? -1 : open(src->path, O_RDONLY | O_CLOEXEC);
    if (!src->mem && fd < 0) return 0;
    size_t cuts = cuts_at ? ncuts : (size_t)parts - 1;
    for (size_t k = 0; k < cuts && n < TP_PARTS_MAX - 1; k++) {
        uint64_t cut = cuts_at ? cuts_at[k] : size * (k + 1) / (uint64_t)parts;
        uint64_t at = cut > 0 && cut < size ? candidate_after(src, fd, size, cut) : 0;
        if (at && (n == 0 || at > stops[n - 1])) stops[n++] = at;
    }
    if (fd >= 0) close(fd);
    return n;
}

/* ---- the parts ---------------------------------------------------------------------------- */

typedef struct job {
    tp_part part;
    tp_model model; /* parts after the first: their own */
    pthread_t thread;
    int started; /* on a thread of its own (else read inline) */
} job;

static void *read_job(void *arg) {
    job *j = arg;
    tp_part_read(&j->part);
    return NULL;
}

/* Part k >= 1's bytes: the input from its start on, never gzip (a part begins at a '{'). */
static tp_input *part_input(const tp_split_src *src, uint64_t size, uint64_t start, char *err,
                            size_t errlen) {
    assert(start < size);
    if (!src->mem) return tp_input_open_at(src->path, start, err, errlen);
    tp_input *in = tp_input_mem((const char *)src->mem + start, (size_t)(size - start));
    if (!in) snprintf(err, errlen, "out of memory");
    return in;
}

/* The parts on threads, the first on the calling thread; a part whose thread cannot start is
 * read after the first. */
static void read_all(job *jobs, size_t njobs) {
    for (size_t k = 1; k < njobs; k++)
        jobs[k].started = pthread_create(&jobs[k].thread, NULL, read_job, &jobs[k]) == 0;
    tp_part_read(&jobs[0].part);
    for (size_t k = 1; k < njobs; k++) {
        if (jobs[k].started)
            pthread_join(jobs[k].thread, NULL);
        else
            tp_part_read(&jobs[k].part);
    }
}

/* ---- the merge ---------------------------------------------------------------------------- */

static void merge_facts(tp_part *dst, const tp_part *src) {
    tp_read_facts *d = &dst->facts;
    const tp_read_facts *s = &src->facts;
    if (s->set & TP_FACT_BASE) d->base_ns = s->base_ns;
    if (s->set & TP_FACT_RANK) d->rank = s->rank;
    if (s->set & TP_FACT_WORLD) d->world_size = s->world_size;
    if (s->set & TP_FACT_TPROF_RANK) d->tprof_rank = s->tprof_rank;
    if (s->set & TP_FACT_TPROF_WORLD) d->tprof_world_size = s->tprof_world_size;
    if (s->set & TP_FACT_DROPPED) d->dropped = s->dropped;
    if (s->set & TP_FACT_PARTIAL) d->partial = s->partial;
    if (s->set & TP_FACT_FLIGHT) {
        d->flight_step = s->flight_step;
        memcpy(d->flight_reason, s->flight_reason, sizeof(d->flight_reason));
    }
    d->set |= s->set;
    d->events_in += s->events_in;
    if (!dst->ev.bad_time) dst->ev.bad_time_at = src->ev.bad_time_at;
    dst->ev.bad_time += src->ev.bad_time;
    dst->ev.with_phase += src->ev.with_phase;
    dst->end = src->end;
}

static void merge_devices(tp_model *m, const tp_model *s, const tp_str *map) {
    for (size_t i = 0; i < s->ndevices; i++) {
        const tp_device *from = &s->devices[i];
        tp_device *d = tp_model_device(m, from->id);
        if (!d) continue;
        *d = *from;
        d->name = map[from->name];
    }
}

/* One part's ids in the first model, and where its events and args go there. */
typedef struct remap {
    tp_model *from; /* the part's own model; freed by the piece that finishes it last */
    tp_str *str;
    uint32_t *track;
    size_t event_at, arg_at; /* its slices of the first model's events and args */
    unsigned pieces_left;    /* pieces not copied yet (atomic) */
} remap;

/* The serial half of a part's merge: its strings, tracks and devices are added to the first
 * model in the part's order of first use (so ids come out as one read makes them), its
 * pending names and facts follow; its events and args are only given their slices. */
static int unify_part(tp_part *dst, tp_part *src, remap *r, size_t event_at, size_t arg_at) {
    tp_model *m = dst->m, *s = src->m;
    *r = (remap){.from = s, .event_at = event_at, .arg_at = arg_at};
    r->str = malloc((s->strings.n ? s->strings.n : 1) * sizeof(*r->str));
    r->track = malloc((s->ntracks ? s->ntracks : 1) * sizeof(*r->track));
    int rc = r->str && r->track ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < s->strings.n; i++)
        r->str[i] = tp_strtab_intern_from(&m->strings, &s->strings, i); /* hashed once */
    for (size_t t = 0; rc == 0 && t < s->ntracks; t++) {
        const tp_track *tr = &s->tracks[t];
        r->track[t] = tp_model_track(m, tr->pid, r->str[tr->pid_str], tr->tid, r->str[tr->tid_str]);
        if (r->track[t] == UINT32_MAX) rc = -1;
    }
    if (rc == 0) merge_devices(m, s, r->str);
    if (rc == 0) rc = tp_evread_adopt_names(&dst->ev, &src->ev, r->str);
    if (rc == 0) merge_facts(dst, src);
    if (rc != 0 || s->failed) m->failed = 1;
    return rc;
}

static void remap_free(remap *r) {
    free(r->str);
    free(r->track);
}

/* A piece of the parallel copy: events [ev_from, ev_to) and args [arg_from, arg_to) of one
 * part, remapped into their slices of the first model. */
typedef struct piece {
    tp_model *m;
    remap *r;
    size_t ev_from, ev_to, arg_from, arg_to;
} piece;

static void copy_piece(const piece *pc) {
    const remap *r = pc->r;
    const tp_model *s = r->from;
    /* A model with no args (or no events) has NULL arrays: no pointer arithmetic on them. */
    tp_event *ev = pc->ev_to > pc->ev_from ? pc->m->events + r->event_at : NULL;
    tp_arg *args = pc->arg_to > pc->arg_from ? pc->m->args + r->arg_at : NULL;
    for (size_t i = pc->arg_from; i < pc->arg_to; i++) {
        tp_arg a = s->args[i];
        a.key = r->str[a.key];
        if (a.type == TP_ARG_STR || a.type == TP_ARG_JSON) a.v.s = r->str[a.v.s];
        args[i] = a;
    }
    for (size_t i = pc->ev_from; i < pc->ev_to; i++) {
        tp_event e = s->events[i];
        e.name = r->str[e.name];
        e.cat = r->str[e.cat];
        e.track = r->track[e.track];
        e.arg0 += (uint32_t)r->arg_at;
        ev[i] = e;
    }
}

/* Copies a piece; the last piece of a part frees the part's model (its memory goes as the merge
 * goes, not at the end). */
static void run_piece(const piece *pc) {
    copy_piece(pc);
    if (__atomic_sub_fetch(&pc->r->pieces_left, 1, __ATOMIC_ACQ_REL) == 0) {
        tp_model_free(pc->r->from);
        tp_model_init(pc->r->from);
    }
}

/* A worker of the copy: pieces first, first + stride, ... */
typedef struct worker {
    const piece *pieces;
    size_t npieces, first, stride;
    pthread_t thread;
    int started;
} worker;

static void *run_worker(void *arg) {
    const worker *w = arg;
    for (size_t i = w->first; i < w->npieces; i += w->stride)
        run_piece(&w->pieces[i]);
    return NULL;
}

/* The pieces of parts r[0..n): each part cut into `per` pieces of equal event counts (args cut
 * at the same fractions). Their count. */
static size_t cut_pieces(tp_model *m, remap *r, size_t n, size_t per, piece *out) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        size_t nev = r[i].from->nevents, nargs = r[i].from->nargs;
        r[i].pieces_left = (unsigned)per;
        for (size_t k = 0; k < per; k++)
            out[count++] = (piece){.m = m,
                                   .r = &r[i],
                                   .ev_from = nev * k / per,
                                   .ev_to = nev * (k + 1) / per,
                                   .arg_from = nargs * k / per,
                                   .arg_to = nargs * (k + 1) / per};
    }
    return count;
}

/* Copies every piece on `threads` threads (the calling one among them); a worker whose thread
 * cannot start runs on the calling thread afterwards. */
static void copy_pieces(const piece *pieces, size_t npieces, size_t threads) {
    worker w[TP_PARTS_MAX];
    assert(threads >= 1 && threads <= TP_PARTS_MAX);
    for (size_t k = 0; k < threads; k++) {
        w[k] = (worker){.pieces = pieces, .npieces = npieces, .first = k, .stride = threads};
        w[k].started = k > 0 && pthread_create(&w[k].thread, NULL, run_worker, &w[k]) == 0;
    }
    run_worker(&w[0]);
    for (size_t k = 1; k < threads; k++) {
        if (w[k].started)
            pthread_join(w[k].thread, NULL);
        else
            run_worker(&w[k]);
    }
}

/* Appends the parts of the chain after the first (chain[1..n)) to the first part's model: the
 * tables one part after the other on this thread, then the events and args, each part into
 * its slice, on `threads` threads. Every part's model is freed. 0 or -1 (out of memory). */
static int merge_parts(job *jobs, const size_t *chain, size_t n, size_t threads) {
    tp_part *first = &jobs[chain[0]].part;
    tp_model *m = first->m;
    remap r[TP_PARTS_MAX];
    size_t nev = m->nevents, nargs = m->nargs, done = 0;
    int rc = 0;
    for (; done + 1 < n && rc == 0; done++) {
        tp_part *p = &jobs[chain[done + 1]].part;
        rc = unify_part(first, p, &r[done], nev, nargs);
        nev += p->m->nevents;
        nargs += p->m->nargs;
    }
    if (rc == 0 && (nargs > UINT32_MAX || TP_GROW(m->args, m->cap_args, nargs) ||
                    TP_GROW(m->events, m->cap_events, nev)))
        rc = -1;
    size_t per = done ? (threads + done - 1) / done : 1;
    piece *pieces = rc == 0 && done ? malloc(done * per * sizeof(*pieces)) : NULL;
    if (pieces) {
        m->nevents = nev;
        m->nargs = nargs;
        copy_pieces(pieces, cut_pieces(m, r, done, per, pieces), threads);
    } else if (done) {
        m->failed = 1;
        rc = -1;
    }
    free(pieces);
    for (size_t i = 0; i < done; i++)
        remap_free(&r[i]);
    return rc;
}

/* ---- the chain ---------------------------------------------------------------------------- */

/* The parts of the chain, in file order, into chain[]; their count. */
static size_t follow_chain(const job *jobs, size_t njobs, size_t *chain) {
    size_t n = 0, k = 0;
    for (;;) {
        chain[n++] = k;
        const tp_part *p = &jobs[k].part;
        if (p->rc != 0 || p->stopped == 0) return n;
        k += p->stopped;          /* its stop i (from 0) is the start of part k + 1 + i */
        if (k >= njobs) return n; /* (cannot be: a stop is some part's start) */
    }
}

/* Whether a B range may have its E in another part of the chain (see the head). */
static int ranges_cross(const job *jobs, const size_t *chain, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const tp_evread *ev = &jobs[chain[i]].part.ev;
        if (i > 0 && ev->orphan_ends) return 1;
        if (i + 1 < n && tp_evread_open_ranges(ev)) return 1;
    }
    return 0;
}

/* Gives the model back as it was before the first part (but for strings, tracks and devices
 * that the one-thread read adds again, in the same order). */
static void undo_first(tp_model *m, size_t first_event, size_t first_arg) {
    m->nevents = first_event;
    m->nargs = first_arg;
}

static int run_parts(const tp_split_src *src, uint64_t size, const char *name, tp_model *m,
                     int form, const tp_read_opts *o, size_t threads, const uint64_t *stops,
                     size_t nstops, char *err, size_t errlen) {
    int progress = o ? o->progress : 0;
    size_t njobs = nstops + 1, first_event = m->nevents, first_arg = m->nargs;
    job *jobs = calloc(njobs, sizeof(*jobs));
    if (!jobs) return TP_PARTS_DECLINED;
    int rc = 0;
    tp_read_budget budget = {.max = o ? o->max_memory : 0, .used = o ? o->memory_used : 0};
    for (size_t k = 0; k < njobs; k++) {
        tp_part *p = &jobs[k].part;
        p->budget = &budget;
        p->name = name;
        p->cap = src->cap;
        p->start = k ? stops[k - 1] : 0;
        p->stops = stops + k; /* stop i of part k begins part k + 1 + i */
        p->nstops = nstops - k;
        p->m = k ? &jobs[k].model : m;
        tp_model_init(&jobs[k].model);
        p->in = part_input(src, size, p->start, p->err, sizeof(p->err));
        p->form = k ? form : TP_FORM_UNKNOWN;
        p->progress = k ? 0 : progress;
        p->keep_args = o ? o->keep_args : 0;
        p->cut_short_ok = o ? o->cut_short_ok : 0;
        if (!p->in) rc = -1;
    }
    tp_input *peers[TP_PARTS_MAX];
    for (size_t k = 1; k < njobs; k++)
        peers[k - 1] = jobs[k].part.in;
    jobs[0].part.peers = peers; /* its progress line counts every part */
    if (rc == 0) read_all(jobs, njobs);
    size_t chain[TP_PARTS_MAX], n = rc == 0 ? follow_chain(jobs, njobs, chain) : 0;
    if (rc != 0 || ranges_cross(jobs, chain, n)) {
        undo_first(m, first_event, first_arg);
        rc = TP_PARTS_DECLINED;
    } else {
        tp_part *first = &jobs[0].part, *last = &jobs[chain[n - 1]].part;
        (void)merge_parts(jobs, chain, n, threads); /* out of memory: m->failed says it */
        if (last != first) {
            first->rc = last->rc;
            memcpy(first->err, last->err, sizeof(first->err));
        }
        rc = tp_part_finish(first, first_event);
        if (rc && err && errlen) snprintf(err, errlen, "%s", first->err);
        if (o && o->cut_short) *o->cut_short = last->cut_short;
    }
    for (size_t k = 0; k < njobs; k++) {
        tp_part_free(&jobs[k].part);
        tp_input_close(jobs[k].part.in);
        tp_model_free(&jobs[k].model);
    }
    free(jobs);
    return rc;
}

/* TP_FORM_ARRAY or TP_FORM_OBJECT by the first byte of the document (after a byte order mark
 * and whitespace), else TP_FORM_UNKNOWN (one thread says what is wrong). */
static int document_form(const tp_split_src *src, uint64_t size) {
    char head[4096];
    size_t n = size < sizeof(head) ? (size_t)size : sizeof(head);
    if (src->mem) {
        memcpy(head, src->mem, n);
    } else {
        int fd = open(src->path, O_RDONLY | O_CLOEXEC);
        ssize_t got = fd >= 0 ? pread(fd, head, n, 0) : -1;
        if (fd >= 0) close(fd);
        if (got < 0) return TP_FORM_UNKNOWN;
        n = (size_t)got;
    }
    size_t i = n >= 3 && memcmp(head, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    while (i < n && is_ws(head[i]))
        i++;
    if (i == n) return TP_FORM_UNKNOWN;
    return head[i] == '[' ? TP_FORM_ARRAY : head[i] == '{' ? TP_FORM_OBJECT : TP_FORM_UNKNOWN;
}

int tp_parts_read(const tp_split_src *src, tp_input *in, const char *name, tp_model *m,
                  const tp_read_opts *o, char *err, size_t errlen) {
    uint64_t size = tp_input_splittable(in);
    int threads = o && o->threads > 0 ? o->threads : available_cores();
    const uint64_t *cuts = o ? o->splits : NULL;
    if (threads > TP_PARTS_MAX) threads = TP_PARTS_MAX;
    if (size == 0 || (!cuts && (threads < 2 || size / (uint64_t)threads < TP_PART_MIN)))
        return TP_PARTS_DECLINED;
    if (o && o->threads == 1 && !cuts) return TP_PARTS_DECLINED;
    int form = document_form(src, size);
    if (form == TP_FORM_UNKNOWN) return TP_PARTS_DECLINED;
    uint64_t stops[TP_PARTS_MAX];
    size_t nstops = choose_stops(src, size, cuts, cuts ? o->nsplits : 0, threads, stops);
    if (nstops == 0) return TP_PARTS_DECLINED;
    return run_parts(src, size, name, m, form, o, (size_t)threads, stops, nstops, err, errlen);
}
