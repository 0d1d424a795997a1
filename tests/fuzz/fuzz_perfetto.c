/* fuzz_perfetto.c - libFuzzer target: any bytes through the Perfetto protobuf reader
 * (tp_perfetto_read_mem, trace/perfetto_read.h).
 *
 * The reader must return 0, or -1 with one line naming the input ("fuzz: packet N: problem" or
 * "fuzz: problem"); never crash, hang, leak or read out of bounds (the sanitizers check the
 * rest). A model read has every event on one of its tracks and no negative duration, and reading
 * the same bytes again gives the same model. Seeds: tests/fuzz/corpus/fuzz_perfetto/, cut from
 * traces tprof wrote, and sdk_sequences.pftrace, the Perfetto SDK-like trace of
 * tests/integration/test_perfetto_format.py (sequences, default tracks, inline names). */
#include "../unit/reader_same.h"
#include "model/model.h"
#include "trace/perfetto_read.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    static int quiet;
    if (!quiet) {
        tp_log_set_quiet(1);
        quiet = 1;
    }
    tp_model m, g;
    tp_model_init(&m);
    tp_model_init(&g);
    char err[512] = "", gerr[512] = "";
    int rc = tp_perfetto_read_mem(data, size, "fuzz", &m, NULL, err, sizeof(err));
    int grc = tp_perfetto_read_mem(data, size, "fuzz", &g, NULL, gerr, sizeof(gerr));
    if (rc != grc || strcmp(err, gerr) != 0 || (rc == 0 && !reader_same_model(&m, &g))) abort();
    if (rc != 0 && (strncmp(err, "fuzz: ", 6) != 0 || strchr(err, '\n'))) abort();
    for (size_t i = 0; i < m.nevents; i++)
        if (m.events[i].track >= m.ntracks || m.events[i].dur < 0) abort();
    tp_model_free(&m);
    tp_model_free(&g);
    return 0;
}
