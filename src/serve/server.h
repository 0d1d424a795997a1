/* server.h - what the request handler (routes.c) shares with the daemon around it (server.c). */
#ifndef TP_SERVE_SERVER_H
#define TP_SERVE_SERVER_H

#include "serve/cache.h"

#include <microhttpd.h>

typedef struct tp_server {
    int root_fd;               /* the served folder, opened once; every file is below it */
    const char *dir;           /* its path, for the analysis (run names are checked first) */
    tp_serve_cache *cache;     /* the report data per run */
    struct MHD_Response *page; /* the dashboard page, built once, shared by every request */
    int loopback;              /* bound to a loopback address: the Host header is checked */
    uint64_t max_memory;       /* what one run's analysis may take (tp_serve_opts) */
} tp_server;

/* The MHD access handler: routes one request (cls is the tp_server). */
enum MHD_Result tp_serve_handle(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload,
                                size_t *upload_size, void **con_cls);

/* The headers every response carries (no sniffing, no framing, no referrer). */
void tp_serve_common_headers(struct MHD_Response *r);

#endif
