/* fuzz_rundir.c - libFuzzer target: any bytes as the files of a run directory, through
 * `tprof check` (the run-directory reader: src/run/rundir.c lists the files, check.c and
 * check_tables.c read config.json, summary.json, stage_times.json and op_stats.csv and hold
 * them against the traces).
 *
 * The input is cut at each line "--tprof--" into, in order, config.json, summary.json,
 * stage_times.json, op_stats.csv and trace_0001_steps_1-1.json; a part not given is a file not
 * there. The seeds (tests/fuzz/corpus/fuzz_rundir/) are real runs cut that way. check must end
 * with 0 (all agree), 1 (problems, each printed) or 2 (an error line); never crash, leak or
 * read out of bounds (the sanitizers check the rest). */
#include "cli/cli.h"
#include "util/log.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static const char *const files[] = {"config.json", "summary.json", "stage_times.json",
                                    "op_stats.csv", "trace_0001_steps_1-1.json"};
enum { NFILES = sizeof(files) / sizeof(files[0]) };
static const char separator[] = "\n--tprof--\n";

static char dir[64];

static void remove_file(const char *name);

static void cleanup(void) {
    for (size_t k = 0; k < NFILES; k++)
        remove_file(files[k]);
    rmdir(dir);
}

static void setup(void) {
    tp_log_set_quiet(1);
    snprintf(dir, sizeof(dir), "/tmp/fuzz_rundir.XXXXXX");
    if (!mkdtemp(dir)) abort();
    atexit(cleanup);
    /* the verdicts go to standard output: only the sanitizers' reports matter here */
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull < 0 || dup2(devnull, STDOUT_FILENO) < 0) abort();
    close(devnull);
}

static void put_file(const char *name, const unsigned char *p, size_t n) {
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f)) abort();
}

static void remove_file(const char *name) {
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (!dir[0]) setup();
    const unsigned char *p = data, *end = data + size;
    size_t k = 0;
    for (; k < NFILES && p <= end; k++) {
        const unsigned char *cut = memmem(p, (size_t)(end - p), separator, sizeof(separator) - 1);
        const unsigned char *stop = cut ? cut : end;
        put_file(files[k], p, (size_t)(stop - p));
        if (!cut) {
            k++;
            break;
        }
        p = cut + sizeof(separator) - 1;
    }
    for (; k < NFILES; k++)
        remove_file(files[k]);
    char verb[] = "check";
    char *argv[] = {verb, dir, NULL};
    int rc = tp_cli_check.run(2, argv);
    fflush(stdout);
    if (rc < 0 || rc > 2) abort();
    return 0;
}
