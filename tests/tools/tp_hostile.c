/* tp_hostile.c - a profiled program that does one hostile thing, for tests/reliability/.
 *
 * usage: tp_hostile MODE [ARG] [tprof options: --profiling.<key> <value>]
 *   big N      one step holding N ranges, then "ready" on stdout and a wait for a signal (the
 *              test sends SIGTERM/SIGINT while the window is open and large)
 *   deep D     one step: ranges nested D deep, then 10 sibling ranges "after" at depth 1, then a
 *              second step with 10 ranges "later"; ends normally
 *   utf8       two steps whose ranges have names holding invalid UTF-8; ends normally
 *   steps N    N steps of a few ranges each; ends normally
 *   ending N   one step holding N ranges, then "shutdown" on stdout and tprof_shutdown (the test
 *              sends a signal while it writes); "survived" when the process outlives it
 * With TP_HOSTILE_HANDLER set, a SIGTERM/SIGINT handler of the host's own (installed before
 * tprof's) writes "host handler" and exits with status 3.
 * The session starts from tprof_init (argv, environment, TPROF_CONFIG), so every option works.
 * Exit status: 0, 2 when tprof_init fails or the usage is wrong. */
#include "tprof.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void big(long n) {
    tprof_step(); /* the window opens at step 1 (the tests use wait=1, active=1) */
    for (long i = 0; i < n; i++) {
        tprof_begin("op");
        tprof_end();
    }
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}

static void ending(long n) {
    tprof_step();
    for (long i = 0; i < n; i++) {
        tprof_begin("op");
        tprof_end();
    }
    printf("shutdown\n");
    fflush(stdout);
    tprof_shutdown();
    printf("survived\n");
    fflush(stdout);
    exit(0);
}

static void host_handler(int sig) {
    static const char msg[] = "host handler\n";
    (void)sig;
    ssize_t ignored = write(STDOUT_FILENO, msg, sizeof(msg) - 1);
    (void)ignored;
    _exit(3);
}

static void deep(long depth) {
    tprof_step();
    for (long i = 0; i < depth; i++)
        tprof_begin("deep");
    for (long i = 0; i < depth; i++)
        tprof_end();
    tprof_begin("outer");
    for (int i = 0; i < 10; i++) {
        tprof_begin("after");
        tprof_end();
    }
    tprof_end();
    tprof_step();
    for (int i = 0; i < 10; i++) {
        tprof_begin("later");
        tprof_end();
    }
}

static void utf8(void) {
    static const char *const names[] = {"bad\xff name", "half \xc3", "ok \xc3\xa9", "\xed\xa0\x80"};
    for (int s = 0; s < 2; s++) {
        tprof_step();
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            tprof_begin(names[i]);
            usleep(100);
            tprof_end();
        }
    }
}

static void steps(long n) {
    for (long s = 0; s < n; s++) {
        tprof_step();
        tprof_begin("forward");
        usleep(200);
        tprof_end();
        tprof_begin("backward");
        usleep(200);
        tprof_end();
    }
}

int main(int argc, char **argv) {
    if (getenv("TP_HOSTILE_HANDLER")) {
        signal(SIGTERM, host_handler);
        signal(SIGINT, host_handler);
    }
    if (tprof_init(&argc, argv) != 0) return 2;
    if (argc < 2) {
        fprintf(stderr, "usage: tp_hostile big|deep|utf8|steps|ending [N] [tprof options]\n");
        return 2;
    }
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 10;
    if (strcmp(argv[1], "big") == 0) {
        big(n);
    } else if (strcmp(argv[1], "deep") == 0) {
        deep(n);
    } else if (strcmp(argv[1], "utf8") == 0) {
        utf8();
    } else if (strcmp(argv[1], "steps") == 0) {
        steps(n);
    } else if (strcmp(argv[1], "ending") == 0) {
        ending(n);
    } else {
        fprintf(stderr, "tp_hostile: unknown mode %s\n", argv[1]);
        return 2;
    }
    tprof_step();
    tprof_shutdown();
    return 0;
}
