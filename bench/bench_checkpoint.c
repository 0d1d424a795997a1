/* bench_checkpoint.c - what checkpoints cost a streamed trace's writer (tp_chrome_stream_
 * checkpoints: after each segment, the segment and a provisional end of the document in one
 * write, the end overwritten by the next segment), against the same segments streamed without.
 *
 * A segment is EVENTS_PER_SEGMENT host ranges on two threads with a FLOPs arg (500: a loop at
 * 100 k ranges/s between two of the writer's 5 ms polls; 5000: at 1 M ranges/s); TOTAL events
 * are streamed into a file of DIR (a real file: the checkpoint is a write, an ftruncate when the
 * end shrinks and a seek), plain and gzip, with and without checkpoints, the two alternating
 * within each run. Prints per segment size and format the median ns per event of each and the
 * median ratio within a run, and the finished files' sizes (gzip: one member per segment).
 *     bench_checkpoint [TOTAL [RUNS [DIR]]]   (defaults 200000 5 /tmp) */
#include "bench.h"
#include "export/chrome.h"
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* n ranges alternating between two threads of one process, each with a FLOPs arg. */
static void fill_segment(tp_model *m, size_t n) {
    uint32_t t[2] = {tp_model_track(m, 100, 0, 101, 0), tp_model_track(m, 100, 0, 102, 0)};
    tp_str name = tp_model_intern_cstr(m, "aten::addmm"), cat = tp_model_intern_cstr(m, "cpu_op");
    for (size_t i = 0; i < n; i++) {
        tp_event *ev =
            tp_model_new_event(m, t[i % 2], TP_HOST_RANGE, (int64_t)i * 1000 + 17, name, cat);
        if (!ev) exit(1);
        ev->dur = 733;
        if (tp_model_arg_int(m, ev, "flops", (int64_t)(i * 2048 + 1))) exit(1);
    }
}

/* Streams `segments` copies of seg into dir/ck.json[.gz]; seconds taken; *size the file's. */
static double stream(const char *dir, const tp_model *seg, size_t segments, int gzip, int ck,
                     long long *size) {
    char tmp[512], part[512], path[512], err[512];
    snprintf(tmp, sizeof(tmp), "%s/ck_writing", dir);
    snprintf(part, sizeof(part), "%s/ck.partial.json", dir);
    snprintf(path, sizeof(path), "%s/ck.json", dir);
    tp_model head, last;
    tp_model_init(&head);
    tp_model_init(&last);
    fill_segment(&last, 2);
    tp_chrome_opts o = {.gzip = gzip, .config_json = "{\"stream\": true}"};
    double t0 = bench_now_s(CLOCK_MONOTONIC);
    tp_chrome_stream *s = tp_chrome_stream_open(&head, tmp, &o, err, sizeof(err));
    if (!s || (ck && tp_chrome_stream_checkpoints(s, part))) {
        fprintf(stderr, "bench_checkpoint: %s\n", err);
        exit(1);
    }
    for (size_t i = 0; i < segments; i++)
        tp_chrome_stream_add_events(s, seg);
    if (tp_chrome_stream_end(s, &last, path, NULL, err, sizeof(err))) {
        fprintf(stderr, "bench_checkpoint: %s\n", err);
        exit(1);
    }
    double t = bench_now_s(CLOCK_MONOTONIC) - t0;
    struct stat st;
    *size = stat(path, &st) == 0 ? (long long)st.st_size : -1;
    unlink(path);
    tp_model_free(&head);
    tp_model_free(&last);
    return t;
}

enum { MAX_RUNS = 64 };

int main(int argc, char **argv) {
    size_t total = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    const char *dir = argc > 3 ? argv[3] : "/tmp";
    if (runs < 1 || runs > MAX_RUNS || total < 5000) return 2;
    static const size_t per[] = {500, 5000};
    for (int gzip = 0; gzip < 2; gzip++) {
        for (size_t k = 0; k < sizeof(per) / sizeof(per[0]); k++) {
            tp_model seg;
            tp_model_init(&seg);
            fill_segment(&seg, per[k]);
            size_t segments = total / per[k], events = segments * per[k];
            double off[MAX_RUNS], on[MAX_RUNS], ratio[MAX_RUNS];
            long long size_off = 0, size_on = 0;
            for (int r = 0; r < runs; r++) {
                int first = r % 2; /* alternate which goes first */
                double a = 0, b = 0;
                for (int j = 0; j < 2; j++) {
                    if ((j == 0) == (first == 0))
                        a = stream(dir, &seg, segments, gzip, 0, &size_off);
                    else
                        b = stream(dir, &seg, segments, gzip, 1, &size_on);
                }
                off[r] = a * 1e9 / (double)events;
                on[r] = b * 1e9 / (double)events;
                ratio[r] = b / a;
            }
            printf("%s, %zu events a segment: without %.1f ns/event, with checkpoints %.1f "
                   "ns/event; ratio %.3f (median of %d); file %lld vs %lld bytes\n",
                   gzip ? "gzip" : "plain", per[k], bench_median(off, runs), bench_median(on, runs),
                   bench_median(ratio, runs), runs, size_off, size_on);
            tp_model_free(&seg);
        }
    }
    return 0;
}
