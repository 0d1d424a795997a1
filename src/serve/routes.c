/* routes.c - what each request gets (the access handler of the daemon, server.c).
 *
 *   GET /                       the dashboard page (the report's template, no data embedded)
 *   GET /api/runs               the runs of the folder (serve/runs.h), oldest first
 *   GET /api/data?run=NAME      the report data of a run (serve/cache.h); ETag = its change key
 *   GET /api/compare?a=A&b=B    the report data of run A compared with run B (both checked as
 *                               api/data's run); ETag = a key of both change keys
 *   GET /api/trace?run=NAME     a run's Trace view, `{"trace": ...}` (the page asks it once per
 *                               run, not every second); ETag = its change key
 *   GET /runs/NAME/FILE         a file of a run, read-only (serve/confine.h)
 *
 * HEAD is GET without the body; any other method gets 405. The request path and every run name
 * arrive undecoded and go through serve/path.c before anything is opened: a bad one gets 400,
 * a name that is no file below the folder (a link, a directory, a FIFO) 404. */
#include "serve/server.h"

#include "serve/confine.h"
#include "serve/path.h"
#include "serve/runs.h"
#include "util/buf.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* 422: libmicrohttpd renamed its constant (..._ENTITY, then ..._CONTENT) across versions. */
#define HTTP_UNPROCESSABLE 422

void tp_serve_common_headers(struct MHD_Response *r) {
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
}

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *r,
                             const char *type) {
    if (!r) return MHD_NO; /* out of memory: MHD closes the connection */
    if (type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    tp_serve_common_headers(r);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static void free_cb(void *p) {
    free(p);
}

/* A response owning b's bytes (freed with it), or NULL (b freed) when out of memory. */
static struct MHD_Response *response_of(tp_buf *b) {
    struct MHD_Response *r = b->failed ? NULL
                                       : MHD_create_response_from_buffer_with_free_callback_cls(
                                             b->len, b->data, free_cb, b->data);
    if (!r) tp_buf_free(b);
    return r;
}

/* A short text answer: "<status> <message>\n". */
static enum MHD_Result answer_text(struct MHD_Connection *conn, unsigned status,
                                   const char *message) {
    tp_buf b;
    tp_buf_init(&b);
    tp_buf_printf(&b, "%u %s\n", status, message);
    struct MHD_Response *r = response_of(&b);
    if (r && status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    return queue(conn, status, r, "text/plain; charset=utf-8");
}

/* Hands a tp_buf's bytes to MHD (freed with the response). */
static enum MHD_Result answer_buf(struct MHD_Connection *conn, unsigned status, tp_buf *b,
                                  const char *type) {
    struct MHD_Response *r = response_of(b);
    if (!r) return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    return queue(conn, status, r, type);
}

static enum MHD_Result answer_runs(tp_server *s, struct MHD_Connection *conn) {
    tp_serve_run *runs;
    size_t n, left_out;
    if (tp_serve_runs_list(s->root_fd, &runs, &n, &left_out))
        return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read the folder");
    tp_buf b;
    tp_buf_init(&b);
    tp_serve_runs_json(&b, runs, n, left_out);
    free(runs);
    return answer_buf(conn, MHD_HTTP_OK, &b, "application/json");
}

static void release_cb(void *blob) {
    tp_serve_blob_release(blob);
}

/* The run named by query argument `arg`, decoded and checked (serve/path.c) and scanned into
 * *run; NULL, or the status to answer with its reason in why (a 400, 404 or 403). */
static unsigned named_run(tp_server *s, struct MHD_Connection *conn, const char *arg,
                          char name[TP_SERVE_NAME_MAX + 1], tp_serve_run *run, const char **why) {
    const char *raw = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, arg);
    if (!raw) {
        *why = "missing";
        return MHD_HTTP_BAD_REQUEST;
    }
    if (tp_serve_name_decode(raw, strlen(raw), name, TP_SERVE_NAME_MAX + 1, why))
        return MHD_HTTP_BAD_REQUEST;
    if (tp_serve_run_scan(s->root_fd, name, run)) {
        *why = "no such run";
        return MHD_HTTP_NOT_FOUND;
    }
    if (run->has_link) {
        *why = "the run holds a symbolic link: not analysed";
        return MHD_HTTP_FORBIDDEN;
    }
    return 0;
}

/* "<dir>/<name>" (name checked by named_run), or NULL when out of memory. */
static char *run_path(const tp_server *s, const char *name) {
    size_t plen = strlen(s->dir) + strlen(name) + 2;
    char *path = malloc(plen);
    if (path) snprintf(path, plen, "%s/%s", s->dir, name);
    return path;
}

/* The cached (or computed) report data of the runs at paths for change key `key`, as the
 * answer: ETag the key, 304 when the client has it, 422 for a run that cannot be analysed. */
static enum MHD_Result answer_blob(tp_server *s, struct MHD_Connection *conn, const char *name,
                                   const char *const *paths, size_t npaths, tp_serve_what what,
                                   uint64_t key) {
    char etag[40];
    snprintf(etag, sizeof(etag), "\"%016" PRIx64 "\"", key);
    const char *since = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "If-None-Match");
    if (since && strcmp(since, etag) == 0) {
        struct MHD_Response *r =
            MHD_create_response_from_buffer_with_free_callback_cls(0, NULL, NULL, NULL);
        if (r) MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
        return queue(conn, MHD_HTTP_NOT_MODIFIED, r, NULL);
    }
    tp_serve_blob *blob = tp_serve_cache_get(s->cache, name, paths, npaths, what, key);
    if (!blob) return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback_cls(
        blob->len, blob->data, release_cb, blob);
    if (!r) {
        tp_serve_blob_release(blob);
        return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    unsigned status = blob->ok ? MHD_HTTP_OK : HTTP_UNPROCESSABLE;
    return queue(conn, status, r, "application/json");
}

/* api/data?run=NAME and api/trace?run=NAME: the run's report data, cached under its name, or
 * its Trace view, cached under "NAME/". */
static enum MHD_Result answer_run(tp_server *s, struct MHD_Connection *conn, tp_serve_what what) {
    char name[TP_SERVE_NAME_MAX + 2];
    tp_serve_run run;
    const char *why;
    unsigned status = named_run(s, conn, "run", name, &run, &why);
    if (status == MHD_HTTP_BAD_REQUEST && strcmp(why, "missing") == 0)
        why = what == TP_SERVE_TRACE ? "api/trace needs ?run=NAME" : "api/data needs ?run=NAME";
    if (status) return answer_text(conn, status, why);
    char *path = run_path(s, name);
    if (!path) return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    const char *paths[1] = {path};
    size_t len = strlen(name); /* at most TP_SERVE_NAME_MAX: room for the slash */
    if (what == TP_SERVE_TRACE) name[len] = '/', name[len + 1] = '\0';
    enum MHD_Result ret = answer_blob(s, conn, name, paths, 1, what, run.key);
    free(path);
    return ret;
}

/* api/compare?a=A&b=B: the report data of run A compared with run B (both checked as api/data
 * checks its run), cached under "A/B" with a key that moves when either run changes. */
static enum MHD_Result answer_compare(tp_server *s, struct MHD_Connection *conn) {
    char names[2][TP_SERVE_NAME_MAX + 1], why_line[128];
    tp_serve_run runs[2];
    static const char *const args[2] = {"a", "b"};
    for (int i = 0; i < 2; i++) {
        const char *why;
        unsigned status = named_run(s, conn, args[i], names[i], &runs[i], &why);
        if (status == MHD_HTTP_BAD_REQUEST && strcmp(why, "missing") == 0)
            why = "api/compare needs ?a=RUN&b=RUN";
        if (!status) continue;
        snprintf(why_line, sizeof(why_line), "%s: %s", args[i], why);
        return answer_text(conn, status, why_line);
    }
    char pair[2 * TP_SERVE_NAME_MAX + 2];
    snprintf(pair, sizeof(pair), "%s/%s", names[0], names[1]);
    char *paths[2] = {run_path(s, names[0]), run_path(s, names[1])};
    enum MHD_Result ret;
    if (!paths[0] || !paths[1]) {
        ret = answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    } else {
        /* either run's change moves the pair's key; a and b swapped give another key */
        uint64_t key = runs[0].key * 0x9e3779b97f4a7c15u ^ (runs[1].key + 0x632be59bd9b4e019u);
        ret = answer_blob(s, conn, pair, (const char *const *)paths, 2, TP_SERVE_DATA, key);
    }
    free(paths[0]), free(paths[1]);
    return ret;
}

/* The media type of a run file, by its name's ending. */
static const char *media_type(const char *name) {
    static const struct {
        const char *ending, *type;
    } types[] = {{".json", "application/json"},
                 {".gz", "application/gzip"},
                 {".csv", "text/csv; charset=utf-8"},
                 {".html", "text/html; charset=utf-8"},
                 {".txt", "text/plain; charset=utf-8"},
                 {".md", "text/plain; charset=utf-8"},
                 {".png", "image/png"}};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        size_t e = strlen(types[i].ending);
        if (n >= e && strcasecmp(name + n - e, types[i].ending) == 0) return types[i].type;
    }
    return "application/octet-stream";
}

static enum MHD_Result answer_file(tp_server *s, struct MHD_Connection *conn,
                                   const char *const *seg, size_t n) {
    struct stat st;
    int fd = tp_serve_open_file(s->root_fd, seg, n, &st);
    if (fd < 0) return answer_text(conn, MHD_HTTP_NOT_FOUND, "not found");
    /* MHD owns fd from here: it closes it with the response, or on failure to create one. */
    struct MHD_Response *r = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
    if (!r) close(fd);
    /* A run's file runs in a sandbox, an origin of its own: a page among the artifacts (the
     * run's report.html, or anything else put there) may run its script, never as the
     * dashboard (reading other runs through the API). */
    if (r) MHD_add_response_header(r, "Content-Security-Policy", "sandbox allow-scripts");
    return queue(conn, MHD_HTTP_OK, r, media_type(seg[n - 1]));
}

/* The Host header names this machine, or is absent (HTTP/1.0). A server on a loopback address
 * refuses other names, so a web page whose name an attacker resolves to 127.0.0.1 (DNS
 * rebinding) cannot read the profiles through the browser. An SSH tunnel keeps "localhost". */
static int host_allowed(struct MHD_Connection *conn) {
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!host) return 1;
    size_t len;
    if (host[0] == '[') {
        const char *end = strchr(host, ']');
        return end && (size_t)(end - host) == 4 && strncmp(host, "[::1]", 5) == 0;
    }
    const char *colon = strchr(host, ':');
    len = colon ? (size_t)(colon - host) : strlen(host);
    return (len == 9 && strncasecmp(host, "localhost", 9) == 0) ||
           (len >= 4 && strncmp(host, "127.", 4) == 0 && strspn(host, "0123456789.") == len);
}

/* ---- requests refused before any route (RFC 7230: 400 for these) ---- */

typedef struct header_counts {
    unsigned host, content_length;
} header_counts;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value) {
    header_counts *c = cls;
    (void)kind, (void)value;
    c->host += strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0;
    c->content_length += strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0;
    return MHD_YES;
}

/* A port: digits only (maybe none, as RFC 3986 allows), to the end. */
static int port_ok(const char *p, const char *end) {
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    return p == end;
}

/* Host = uri-host [":" port] (RFC 7230 5.4, RFC 3986 3.2.2): "[" IPv6 "]" or a reg-name /
 * IPv4 of unreserved, sub-delims and '%' bytes. "127.0.0.1:80@evil.com", "[::1]evil.com", a
 * space (an obs-fold joined) or a NUL make it malformed. */
static int host_well_formed(const char *h, size_t len) {
    const char *p = h, *end = h + len;
    if (len == 0 || strlen(h) != len) return 0;
    if (*p == '[') {
        for (p++; p < end && (isxdigit((unsigned char)*p) || *p == ':' || *p == '.'); p++)
            ;
        if (p == end || *p != ']') return 0;
        p++;
    } else {
        for (; p < end && (isalnum((unsigned char)*p) || strchr("-._~!$&'()*+,;=%", *p)); p++)
            ;
        if (p == h) return 0;
    }
    return p == end || (*p == ':' && port_ok(p + 1, end));
}

/* Why a request is refused before routing (400), or NULL: headers that make the request
 * ambiguous to a proxy in front (two Content-Length, two Host: request smuggling) or that
 * HTTP/1.1 requires well-formed. */
static const char *bad_request(struct MHD_Connection *conn, const char *version) {
    header_counts c = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &c);
    if (c.content_length > 1) return "more than one Content-Length";
    if (c.host > 1) return "more than one Host";
    const char *host = NULL;
    size_t len = 0;
    if (MHD_lookup_connection_value_n(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST,
                                      strlen(MHD_HTTP_HEADER_HOST), &host, &len) != MHD_YES)
        return strcmp(version, MHD_HTTP_VERSION_1_0) == 0 ? NULL : "HTTP/1.1 needs a Host";
    return host_well_formed(host, len) ? NULL : "malformed Host";
}

/* What *con_cls points to once a request's headers were seen (any non-NULL marker). */
static int headers_seen;

enum MHD_Result tp_serve_handle(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload,
                                size_t *upload_size, void **con_cls) {
    (void)upload;
    tp_server *s = cls;
    /* Another method is refused at once (the connection is then closed). For GET and HEAD the
     * first call only announces the headers: answering then would make libmicrohttpd close the
     * connection (it cannot know the request ended), so the answer waits for the second call;
     * a body is discarded. */
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return answer_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD");
    if (*con_cls == NULL) { /* the first call: answering now closes the connection */
        const char *why = bad_request(conn, version);
        if (why) return answer_text(conn, MHD_HTTP_BAD_REQUEST, why);
        *con_cls = &headers_seen;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (s->loopback && !host_allowed(conn))
        return answer_text(conn, MHD_HTTP_FORBIDDEN, "Host is not this machine");
    tp_serve_path p;
    const char *why;
    if (tp_serve_path_parse(url, strlen(url), &p, &why))
        return answer_text(conn, MHD_HTTP_BAD_REQUEST, why);
    if (p.n == 0) return MHD_queue_response(conn, MHD_HTTP_OK, s->page);
    if (strcmp(p.seg[0], "api") == 0 && p.n == 2) {
        if (strcmp(p.seg[1], "runs") == 0) return answer_runs(s, conn);
        if (strcmp(p.seg[1], "data") == 0) return answer_run(s, conn, TP_SERVE_DATA);
        if (strcmp(p.seg[1], "trace") == 0) return answer_run(s, conn, TP_SERVE_TRACE);
        if (strcmp(p.seg[1], "compare") == 0) return answer_compare(s, conn);
    }
    if (strcmp(p.seg[0], "runs") == 0 && p.n >= 3) return answer_file(s, conn, p.seg + 1, p.n - 1);
    return answer_text(conn, MHD_HTTP_NOT_FOUND, "not found");
}
