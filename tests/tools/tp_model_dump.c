/* tp_model_dump.c - reads traces with the trace reader and prints a JSON summary of the model,
 * for tests that check the reader against an independent reading with Python's json module.
 *
 * Usage: tp_model_dump FILE... (several files go into one model; "-" is standard input).
 * Sums of times are taken modulo 2^64 so that C and Python agree without big integers. */
#include "model/model.h"
#include "trace/reader.h"
#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"",        "host_range", "kernel",
                                         "memcpy",  "memset",     "gpu_annotation",
                                         "instant", "memory",     "counter"};
enum { NKINDS = 9 };

typedef struct kind_sum {
    uint64_t count, dur, ts, name_bytes, args;
} kind_sum;

static void put_key(tp_buf *b, const char *key) {
    tp_buf_json_cstr(b, key);
    tp_buf_putc(b, ':');
}

static void put_u64(tp_buf *b, const char *key, uint64_t v) {
    put_key(b, key);
    tp_buf_u64(b, v);
    tp_buf_putc(b, ',');
}

static void put_i64(tp_buf *b, const char *key, int64_t v) {
    put_key(b, key);
    tp_buf_i64(b, v);
    tp_buf_putc(b, ',');
}

/* "pid/tid" as the summary names a track: the string id when there is one. */
static void track_key(tp_buf *b, const tp_model *m, const tp_track *t) {
    tp_buf k;
    tp_buf_init(&k);
    if (t->pid_str)
        tp_buf_puts(&k, tp_model_str(m, t->pid_str));
    else
        tp_buf_i64(&k, t->pid);
    tp_buf_putc(&k, '/');
    if (t->tid_str)
        tp_buf_puts(&k, tp_model_str(m, t->tid_str));
    else
        tp_buf_i64(&k, t->tid);
    tp_buf_json_str(b, k.data, k.len);
    tp_buf_free(&k);
}

static void kinds(tp_buf *b, const tp_model *m) {
    kind_sum sums[NKINDS] = {{0}};
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *ev = &m->events[i];
        kind_sum *s = &sums[ev->kind < NKINDS ? ev->kind : 0];
        s->count++;
        s->dur += (uint64_t)ev->dur;
        s->ts += (uint64_t)ev->ts;
        s->name_bytes += strlen(tp_model_str(m, ev->name));
        s->args += ev->nargs;
    }
    put_key(b, "kinds");
    tp_buf_putc(b, '{');
    for (int k = 1; k < NKINDS; k++) {
        if (!sums[k].count) continue;
        put_key(b, kind_names[k]);
        tp_buf_putc(b, '{');
        put_u64(b, "count", sums[k].count);
        put_u64(b, "dur_ns", sums[k].dur);
        put_u64(b, "ts_ns", sums[k].ts);
        put_u64(b, "name_bytes", sums[k].name_bytes);
        put_u64(b, "args", sums[k].args);
        b->len--;
        TP_BUF_LIT(b, "},");
    }
    if (b->data[b->len - 1] == ',') b->len--;
    TP_BUF_LIT(b, "},");
}

static void steps_and_links(tp_buf *b, const tp_model *m) {
    uint64_t steps = 0, step_dur = 0, step_sum = 0, corr = 0, corr_sum = 0, ext = 0, ext_sum = 0;
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *ev = &m->events[i];
        if (ev->flags & TP_EVF_STEP) {
            steps++;
            step_dur += (uint64_t)ev->dur;
            step_sum += (uint64_t)tp_step_number(tp_model_str(m, ev->name));
        }
        corr += ev->corr != 0;
        corr_sum += ev->corr;
        ext += ev->ext != 0;
        ext_sum += ev->ext;
    }
    put_u64(b, "steps", steps);
    put_u64(b, "step_dur_ns", step_dur);
    put_u64(b, "step_number_sum", step_sum);
    put_u64(b, "corr_events", corr);
    put_u64(b, "corr_sum", corr_sum);
    put_u64(b, "ext_events", ext);
    put_u64(b, "ext_sum", ext_sum);
}

/* Per arg key over memory, counter and range events: count and sum of the numeric values. */
static void arg_sums(tp_buf *b, const tp_model *m) {
    put_key(b, "arg_sums");
    tp_buf_putc(b, '{');
    size_t start = b->len;
    for (tp_str key = 1; key < m->strings.n; key++) {
        uint64_t n = 0;
        double sum = 0;
        for (size_t i = 0; i < m->nevents; i++) {
            const tp_arg *a = tp_event_arg(m, &m->events[i], key);
            if (!a) continue;
            n++;
            /* string and JSON args ("Collective name", "Input Dims") count, adding nothing */
            sum += a->type == TP_ARG_INT ? (double)a->v.i : a->type == TP_ARG_DOUBLE ? a->v.d : 0;
        }
        if (!n) continue;
        tp_buf_json_cstr(b, tp_model_str(m, key));
        TP_BUF_LIT(b, ":{\"count\":");
        tp_buf_u64(b, n);
        TP_BUF_LIT(b, ",\"sum\":");
        tp_buf_double(b, sum);
        TP_BUF_LIT(b, "},");
    }
    if (b->len > start) b->len--;
    TP_BUF_LIT(b, "},");
}

static void tracks(tp_buf *b, const tp_model *m) {
    uint64_t *per = calloc(m->ntracks + 1, sizeof(*per));
    for (size_t i = 0; per && i < m->nevents; i++)
        per[m->events[i].track]++;
    put_key(b, "track_events");
    tp_buf_putc(b, '{');
    size_t start = b->len;
    for (size_t t = 0; per && t < m->ntracks; t++) {
        if (!per[t]) continue;
        track_key(b, m, &m->tracks[t]);
        tp_buf_putc(b, ':');
        tp_buf_u64(b, per[t]);
        tp_buf_putc(b, ',');
    }
    if (b->len > start) b->len--;
    TP_BUF_LIT(b, "},");
    for (int thread = 0; thread < 2; thread++) {
        put_key(b, thread ? "thread_names" : "process_names");
        tp_buf_putc(b, '{');
        start = b->len;
        for (size_t t = 0; per && t < m->ntracks; t++) {
            tp_str name = thread ? m->tracks[t].thread_name : m->tracks[t].process_name;
            if (!per[t] || !name) continue;
            track_key(b, m, &m->tracks[t]);
            tp_buf_putc(b, ':');
            tp_buf_json_cstr(b, tp_model_str(m, name));
            tp_buf_putc(b, ',');
        }
        if (b->len > start) b->len--;
        TP_BUF_LIT(b, "},");
    }
    free(per);
}

static void devices(tp_buf *b, const tp_model *m) {
    put_key(b, "devices");
    tp_buf_putc(b, '[');
    for (size_t i = 0; i < m->ndevices; i++) {
        const tp_device *d = &m->devices[i];
        tp_buf_putc(b, '{');
        put_i64(b, "id", d->id);
        put_key(b, "name");
        tp_buf_json_cstr(b, tp_model_str(m, d->name));
        tp_buf_putc(b, ',');
        put_u64(b, "total_mem", d->total_mem);
        put_i64(b, "major", d->compute_major);
        put_i64(b, "minor", d->compute_minor);
        put_i64(b, "sms", d->num_sms);
        b->len--;
        TP_BUF_LIT(b, "},");
    }
    if (m->ndevices) b->len--;
    TP_BUF_LIT(b, "],");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: tp_model_dump FILE...\n");
        return 2;
    }
    tp_model m;
    tp_model_init(&m);
    char err[512];
    for (int i = 1; i < argc; i++) {
        if (tp_trace_read_file(argv[i], &m, NULL, err, sizeof(err)) != 0) {
            fprintf(stderr, "%s\n", err);
            tp_model_free(&m);
            return 1;
        }
    }
    tp_buf b;
    tp_buf_init(&b);
    tp_buf_putc(&b, '{');
    put_u64(&b, "input_events", m.input_events);
    put_u64(&b, "input_bytes", m.input_bytes);
    put_i64(&b, "base_ns", m.base_ns);
    put_i64(&b, "rank", m.rank);
    put_i64(&b, "world_size", m.world_size);
    put_u64(&b, "dropped_events", m.dropped_events);
    put_u64(&b, "partial", (uint64_t)m.partial);
    put_u64(&b, "events", m.nevents);
    kinds(&b, &m);
    steps_and_links(&b, &m);
    arg_sums(&b, &m);
    tracks(&b, &m);
    devices(&b, &m);
    b.len--;
    TP_BUF_LIT(&b, "}\n");
    int rc = b.failed || m.failed ? 1 : 0;
    fwrite(b.data, 1, b.len, stdout);
    tp_buf_free(&b);
    tp_model_free(&m);
    return rc;
}
