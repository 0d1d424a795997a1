/* fuzz_summaries.c - libFuzzer target: any bytes as two ranks' summary.json through `tprof
 * analyze --summaries` (src/cli/summaries.c reads their rank_summary with the trace scanner and
 * analysis/ranks.c completes the ranks from them).
 *
 * The input is cut at the first line "--tprof--" into summary.rank0.json and summary.rank1.json
 * (the second is empty without one). The seed (tests/fuzz/corpus/fuzz_summaries/) is a real
 * two-rank run of tests/tools/tp_rank_loop cut that way. analyze must end with 0 or 2 (an error
 * line); never crash, leak or read out of bounds (the sanitizers check the rest). */
#include "cli/cli.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static const char separator[] = "\n--tprof--\n";
static char dir[64], paths[2][128];

static void cleanup(void) {
    unlink(paths[0]);
    unlink(paths[1]);
    rmdir(dir);
}

static void setup(void) {
    tp_log_set_quiet(1);
    snprintf(dir, sizeof(dir), "/tmp/fuzz_summaries.XXXXXX");
    if (!mkdtemp(dir)) abort();
    for (int r = 0; r < 2; r++)
        snprintf(paths[r], sizeof(paths[r]), "%s/summary.rank%d.json", dir, r);
    atexit(cleanup); /* the error lines go to stderr with the sanitizers' reports:
                      * -close_fd_mask=2 silences both */
}

static void put_file(const char *path, const unsigned char *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f)) abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (!dir[0]) setup();
    const unsigned char *cut = memmem(data, size, separator, sizeof(separator) - 1);
    size_t first = cut ? (size_t)(cut - data) : size;
    put_file(paths[0], data, first);
    const unsigned char *rest = cut ? cut + sizeof(separator) - 1 : data + size;
    put_file(paths[1], rest, (size_t)(data + size - rest));
    char verb[] = "analyze", opt[] = "--summaries", json[] = "--json", o[] = "-o",
         out[] = "/dev/null";
    char *argv[] = {verb, opt, json, o, out, dir, NULL};
    int rc = tp_cli_analyze.run(6, argv);
    if (rc != 0 && rc != 2) abort();
    return 0;
}
