/* bench_read.c - throughput and peak memory of the trace reader on one file.
 *
 * Usage: bench_read FILE [raw]
 * Reads FILE once with tp_trace_read_file and prints one line of key=value pairs: the JSON
 * bytes, wall seconds and MB/s (decompressed JSON per second), the same per second of CPU time
 * (user + system of the whole process: on a shared machine it moves less than the wall clock),
 * user and system time apart (system time is mostly the copy out of the page cache, plus the
 * interrupts that land on the process), events kept and read, and the process's peak RSS
 * (getrusage). With "raw" it only read()s
 * the file through a 1 MB buffer: the floor that any reader of this file pays (page cache to
 * user space), measured the same way.
 * bench/reader.sh runs it several times and prints medians and ratios. */
#include "model/model.h"
#include "trace/reader.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* User and system CPU seconds of the whole process so far. */
static void cpu_seconds(double *user, double *sys) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
    *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static long peak_rss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int raw_read(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    static char buf[1 << 20];
    unsigned long long bytes = 0;
    double t0 = now();
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        bytes += (unsigned long long)n;
    double dt = now() - t0;
    close(fd);
    printf("mode=raw bytes=%llu seconds=%.4f mb_s=%.1f peak_rss_kb=%ld\n", bytes, dt,
           (double)bytes / 1e6 / dt, peak_rss_kb());
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_read FILE [raw]\n");
        return 2;
    }
    if (argc > 2 && strcmp(argv[2], "raw") == 0) return raw_read(argv[1]);
    tp_model m;
    tp_model_init(&m);
    char err[512];
    double u0, s0, u1, s1, t0 = now();
    cpu_seconds(&u0, &s0);
    int rc = tp_trace_read_file(argv[1], &m, NULL, err, sizeof(err));
    double dt = now() - t0;
    cpu_seconds(&u1, &s1);
    double du = u1 - u0, ds = s1 - s0, dc = du + ds;
    if (rc != 0) {
        fprintf(stderr, "%s\n", err);
        tp_model_free(&m);
        return 1;
    }
    printf("mode=read bytes=%llu seconds=%.4f mb_s=%.1f cpu_s=%.4f cpu_mb_s=%.1f user_s=%.4f "
           "sys_s=%.4f user_mb_s=%.1f events=%zu input_events=%llu strings=%u peak_rss_kb=%ld\n",
           (unsigned long long)m.input_bytes, dt, (double)m.input_bytes / 1e6 / dt, dc,
           (double)m.input_bytes / 1e6 / dc, du, ds, (double)m.input_bytes / 1e6 / du, m.nevents,
           (unsigned long long)m.input_events, m.strings.n, peak_rss_kb());
    tp_model_free(&m);
    return 0;
}
