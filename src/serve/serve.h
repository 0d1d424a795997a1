/* serve.h - `tprof serve`: a live dashboard over a folder of runs, what the CLI's verb calls.
 *
 * Built only where libmicrohttpd is (cmake/serve.cmake defines TPROF_HAVE_SERVE for the CLI).
 * docs/REPORT.md ("tprof serve") describes what is served and the limits that hold. */
#ifndef TP_SERVE_SERVE_H
#define TP_SERVE_SERVE_H

#define TP_SERVE_DEFAULT_HOST "127.0.0.1"
#define TP_SERVE_DEFAULT_PORT 8000
#define TP_SERVE_PORT_TRIES   10 /* no --port: 8000, else the next free one up to 8009 */
#define TP_SERVE_PORT_DEFAULT (-1)

#include <stdint.h>

typedef struct tp_serve_opts {
    const char *dir;     /* the folder of runs (an output_dir) */
    const char *host;    /* an address or a name; NULL: TP_SERVE_DEFAULT_HOST */
    int port;            /* 0: any free port; TP_SERVE_PORT_DEFAULT: 8000 or the next free one */
    uint64_t max_memory; /* what one run's analysis may take (tp_read_opts.max_memory); 0 none */
} tp_serve_opts;

/* Serves until SIGINT or SIGTERM, having printed its URL on stdout. 0 after a clean stop, or
 * -1 after printing one error line (the folder cannot be read, the address cannot be bound). */
int tp_serve(const tp_serve_opts *o);

#endif
