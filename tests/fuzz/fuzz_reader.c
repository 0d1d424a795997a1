/* fuzz_reader.c - libFuzzer target: any bytes through tp_trace_read_mem.
 *
 * The reader must return 0 or -1 with a one-line message naming the input and a byte offset
 * inside it; never crash, hang, leak or read out of bounds (the sanitizers check the rest).
 * Each input is read three times: with the event fast path, without it (tp_evread_fast), and
 * cut into parts read by threads (the parallel reader, cuts at a third and two thirds and where
 * the input's last byte points): the results must be the same model, byte for byte, and the
 * same message; and as an unfinished trace (cut_short_ok). Bytes that look like a Perfetto protobuf
 * trace go to its reader (fuzz_perfetto.c).
 */
#include "../unit/reader_same.h"
#include "model/model.h"
#include "trace/event.h"
#include "trace/perfetto_read.h"
#include "trace/reader.h"
#include "util/log.h"

#include <stdio.h>
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
    int rc = tp_trace_read_mem(data, size, "fuzz", &m, err, sizeof(err));
    tp_evread_fast = 0;
    int grc = tp_trace_read_mem(data, size, "fuzz", &g, gerr, sizeof(gerr));
    tp_evread_fast = 1;
    if (rc != grc || strcmp(err, gerr) != 0 || !reader_same_model(&m, &g)) abort();
    tp_model_free(&g);
    tp_model_init(&g);
    uint64_t cuts[3] = {size / 3, size ? data[size - 1] % (size / 2 + 1) + size / 3 : 0,
                        2 * (uint64_t)size / 3};
    if (cuts[1] < cuts[0]) cuts[1] = cuts[0];
    tp_read_opts o = {.threads = 2, .splits = cuts, .nsplits = 3};
    grc = tp_trace_read_mem_opts(data, size, "fuzz", &g, &o, gerr, sizeof(gerr));
    if (rc != grc || strcmp(err, gerr) != 0 || (rc == 0 && !reader_same_model(&m, &g))) abort();
    int pf = tp_perfetto_sniff(data, size < 16 ? size : 16);
    if (rc != 0 && pf) {
        /* a Perfetto trace's problems name a packet (fuzz_perfetto.c takes those apart) */
        if (strncmp(err, "fuzz: ", 6) != 0 || strchr(err, '\n')) abort();
    } else if (rc != 0) {
        unsigned long long at;
        /* Compressed input counts offsets in the decompressed JSON, which may be longer. */
        int gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
        if (sscanf(err, "fuzz: byte %llu:", &at) != 1 || (!gz && at > size) || strchr(err, '\n'))
            abort();
    }
    /* An unfinished trace's read (tp_read_opts.cut_short_ok): what reads whole reads the same;
     * what fails fails alike, unless the input ended inside its events (then it reads the events
     * before the end, or, when no whole entry before it is an event, says it is no trace). A
     * Perfetto trace without tprof's header reads whole as another producer's, and as an
     * unfinished one of tprof's is marked cut short (its header comes last): the same events. */
    tp_model c;
    tp_model_init(&c);
    int cut = 0;
    char cerr[512] = "";
    tp_read_opts co = {.threads = 1, .cut_short_ok = 1, .cut_short = &cut};
    int crc = tp_trace_read_mem_opts(data, size, "fuzz", &c, &co, cerr, sizeof(cerr));
    if (rc == 0 && pf && cut && (crc != 0 || !c.partial || c.nevents != m.nevents)) abort();
    if (rc == 0 && !(pf && cut) && (crc != 0 || cut || !reader_same_model(&m, &c))) abort();
    int no_event_before_end = cut && crc != 0 && strstr(cerr, "not a valid trace");
    if ((crc != 0 && strcmp(cerr, err) != 0 && !no_event_before_end) ||
        (crc == 0 && rc != 0 && (!cut || !c.partial)))
        abort();
    for (size_t i = 0; i < c.nevents; i++)
        if (c.events[i].track >= c.ntracks || c.events[i].dur < 0) abort();
    tp_model_free(&c);
    for (size_t i = 0; i < m.nevents; i++)
        if (m.events[i].track >= m.ntracks || m.events[i].dur < 0) abort();
    tp_model_free(&m);
    tp_model_free(&g);
    return 0;
}
