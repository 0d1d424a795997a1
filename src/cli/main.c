/* main.c - the tprof command: finds the verb and hands it the rest of the command line.
 * `tprof help [VERB]`, `tprof --help` and `tprof --version` are answered here. */
#include "cli/cli.h"
#include "util/vec.h"

#include "tprof.h"

#include <stdio.h>
#include <string.h>

static const tp_cli_verb *const verbs[] = {&tp_cli_analyze, &tp_cli_compare, &tp_cli_check,
                                           &tp_cli_merge,   &tp_cli_report,  &tp_cli_serve,
                                           &tp_cli_run};
#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

static const tp_cli_verb *find_verb(const char *name) {
    for (size_t i = 0; i < NVERBS; i++)
        if (strcmp(verbs[i]->name, name) == 0) return verbs[i];
    return NULL;
}

static void usage(FILE *f) {
    fputs("usage: tprof <command> [options] ...\n"
          "\n"
          "A profiler for machine-learning training loops: reads Chrome/Kineto traces\n"
          "(torch.profiler's and tprof's, plain or gzip) and tprof run directories.\n"
          "\n"
          "commands:\n",
          f);
    for (size_t i = 0; i < NVERBS; i++)
        fprintf(f, "  %-9s %s\n", verbs[i]->name, verbs[i]->summary);
    fputs("  help      tprof help COMMAND shows a command's options\n"
          "\n"
          "tprof --version prints the version. Exit status: 0 done, 1 a finding (check found\n"
          "problems, compare found a regression), 2 an error (usage, unreadable input).\n"
          "docs/CLI.md has the details.\n",
          f);
}

static int help(int argc, char **argv) {
    if (argc < 3) {
        usage(stdout);
        return TP_EXIT_OK;
    }
    const tp_cli_verb *v = find_verb(argv[2]);
    if (!v || argc > 3)
        return tp_cli_error(
            "help: %s; the commands are analyze, compare, check, merge, report, serve, run",
            v ? "give one command" : "unknown command");
    fputs(v->help, stdout);
    return TP_EXIT_OK;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return TP_EXIT_ERROR;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return help(argc, argv);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
        printf("tprof %s\n", TPROF_VERSION);
        return TP_EXIT_OK;
    }
    const tp_cli_verb *v = find_verb(cmd);
    if (!v) {
        return tp_cli_error(
            "unknown command \"%s\"; the commands are analyze, compare, check, merge, report, "
            "serve, run (tprof help)",
            cmd);
    }
    tp_grow_allow_huge_pages(); /* the CLI owns its process (see vec.h) */
    return v->run(argc - 1, argv + 1);
}
