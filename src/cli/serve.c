/* serve.c - `tprof serve DIR [--port N] [--host ADDR]`: the live dashboard over a folder of
 * runs (src/serve/). Only the options are read here; where libmicrohttpd was missing at build
 * time (cmake/serve.cmake), the verb says so and fails. */
#include "cli/cli.h"

#ifdef TPROF_HAVE_SERVE
#include "serve/serve.h"
#endif

#include <stdio.h>

/* What one run's analysis may take by default: the dashboard analyses whatever lands in the
 * folder, a few MB of gzip may hold tens of millions of events (issue 22). */
#define TP_SERVE_MAX_MEMORY ((uint64_t)1 << 30)

static const char help[] =
    "usage: tprof serve DIR [--port N] [--host ADDR]\n"
    "\n"
    "Serves a live dashboard over DIR, a folder of runs (an output_dir): the list of its runs\n"
    "and, for the chosen one, the views of `tprof report`, updated while the run is written.\n"
    "Prints its URL and serves until Ctrl-C (SIGINT) or SIGTERM. Read-only (GET and HEAD),\n"
    "and only files below DIR (no \"..\", no absolute path, no symbolic link is followed).\n"
    "\n"
    "options:\n"
    "  --port N      the port (0: any free one); default 8000, or the next free one up to 8009\n"
    "  --host ADDR   the address to listen on; default 127.0.0.1 (this machine only). Another\n"
    "                address lets anyone who can reach it read the profiles: prefer an SSH\n"
    "                tunnel (docs/REPORT.md)\n"
    "  --max-memory SIZE  the memory the analysis of one run may take (512M, 4G; 0: no\n"
    "                limit; default 1G): a bigger run gets its error line on the page\n"
    "  -h, --help    this help\n"
    "\n"
    "Exit status: 0 stopped by a signal, 2 usage error, unreadable DIR or address not bound.\n";

#ifdef TPROF_HAVE_SERVE
static int serve_dir(const char *dir, const char *host, int64_t port, uint64_t max_memory) {
    tp_serve_opts o = {.dir = dir, .host = host, .port = (int)port, .max_memory = max_memory};
    return tp_serve(&o) == 0 ? TP_EXIT_OK : TP_EXIT_ERROR;
}
#else
static int serve_dir(const char *dir, const char *host, int64_t port, uint64_t max_memory) {
    (void)dir, (void)host, (void)port, (void)max_memory;
    return tp_cli_error("serve: this tprof was built without libmicrohttpd (Debian: "
                        "libmicrohttpd-dev; scripts/install-deps), so it cannot serve; "
                        "`tprof report` writes the same views to a file");
}
#endif

static int run(int argc, char **argv) {
    static const tp_cli_opt opts[] = {
        {"help", 'h', 0}, {"port", 0, 1}, {"host", 0, 1}, {"max-memory", 0, 1}};
    tp_cli_parser p;
    tp_cli_parser_init(&p, "serve", argc, argv, opts, sizeof(opts) / sizeof(opts[0]));
    const char *dir = NULL, *host = NULL;
    int64_t port = -1; /* TP_SERVE_PORT_DEFAULT */
    uint64_t max_memory = TP_SERVE_MAX_MEMORY;
    for (int k; (k = tp_cli_next(&p)) != TP_CLI_END;) {
        if (k == TP_CLI_BAD) return TP_EXIT_ERROR;
        if (k == 0) {
            fputs(help, stdout);
            return TP_EXIT_OK;
        }
        if (k == 1 && tp_cli_int_value(&p, 0, 65535, &port)) return TP_EXIT_ERROR;
        if (k == 2) host = p.value;
        if (k == 3 && tp_cli_size_value(&p, &max_memory)) return TP_EXIT_ERROR;
        if (k == TP_CLI_OPERAND) {
            if (dir) return tp_cli_usage("serve", "give one folder of runs");
            dir = p.value;
        }
    }
    if (!dir) return tp_cli_usage("serve", "no folder of runs (DIR)");
    return serve_dir(dir, host, port, max_memory);
}

#ifdef TPROF_HAVE_SERVE
#define SUMMARY "serve a live dashboard over a folder of runs"
#else
#define SUMMARY "serve a live dashboard (not in this build: no libmicrohttpd)"
#endif

const tp_cli_verb tp_cli_serve = {
    .name = "serve",
    .summary = SUMMARY,
    .help = help,
    .run = run,
};
