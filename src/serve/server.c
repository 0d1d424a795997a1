/* server.c - the daemon of `tprof serve` (serve.h): the listening socket, libmicrohttpd's
 * threads and limits, the page built once, and a clean stop on SIGINT or SIGTERM.
 *
 * Limits that keep memory bounded however many requests come (docs/REPORT.md lists them):
 * at most SERVE_CONNECTIONS connections at once, SERVE_CONNECTION_MEMORY bytes for one
 * request's line and headers (a longer one gets 414 or 431 from libmicrohttpd), an idle or
 * slow client dropped after SERVE_TIMEOUT_S, the report data cache bounded (serve/cache.h),
 * one analysis at a time. A few threads poll with epoll, so a client that sends half a request
 * and waits (slowloris) holds one connection slot, never a thread. */
#include "serve/serve.h"

#include "serve/runs.h"
#include "serve/server.h"
#include "report/html.h"
#include "util/buf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SERVE_THREADS           4
#define SERVE_CONNECTIONS       256
#define SERVE_CONNECTION_MEMORY (32 * 1024)
#define SERVE_TIMEOUT_S         10
#define SERVE_CACHE_BYTES       ((size_t)64 * 1024 * 1024)

/* The request target reaches the handler undecoded: serve/path.c decodes and checks it in one
 * place (libmicrohttpd's own decoding would hand over "../" already made from "%2e%2e%2f"). */
static size_t keep_escaped(void *cls, struct MHD_Connection *conn, char *s) {
    (void)cls, (void)conn;
    return strlen(s);
}

static int is_loopback(const struct sockaddr *a) {
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
    return 0;
}

/* A listening socket on host:port; -1 with errno (EADDRINUSE, ...). */
static int listen_on(const struct addrinfo *ai) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0) return fd;
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

/* Binds host at the port asked for, or at 8000 and up when none was. The socket, its
 * address in *bound; -1 after printing the error. */
static int bind_address(const char *host, int port, struct sockaddr_storage *bound) {
    int first = port == TP_SERVE_PORT_DEFAULT ? TP_SERVE_DEFAULT_PORT : port;
    int tries = port == TP_SERVE_PORT_DEFAULT ? TP_SERVE_PORT_TRIES : 1;
    for (int p = first; p < first + tries; p++) {
        char service[16];
        snprintf(service, sizeof(service), "%d", p);
        struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                                 .ai_socktype = SOCK_STREAM};
        struct addrinfo *ai;
        int rc = getaddrinfo(host, service, &hints, &ai);
        if (rc != 0) {
            fprintf(stderr, "tprof: serve: --host %s: %s\n", host, gai_strerror(rc));
            return -1;
        }
        int fd = listen_on(ai);
        int saved = errno;
        freeaddrinfo(ai);
        if (fd >= 0) {
            socklen_t len = sizeof(*bound);
            if (getsockname(fd, (struct sockaddr *)bound, &len) == 0) return fd;
            saved = errno;
            close(fd);
        }
        if (saved != EADDRINUSE || p + 1 == first + tries) {
            fprintf(stderr, "tprof: serve: cannot listen on %s port %d%s: %s\n", host, p,
                    tries > 1 ? " (nor on the ports below it, from 8000)" : "", strerror(saved));
            return -1;
        }
    }
    return -1;
}

/* "http://HOST:PORT/" of the bound address into url. */
static void format_url(const struct sockaddr_storage *a, char *url, size_t cap) {
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
        inet_ntop(AF_INET6, &a6->sin6_addr, ip, sizeof(ip));
        port = ntohs(a6->sin6_port);
        snprintf(url, cap, "http://[%s]:%d/", ip, port);
        return;
    }
    const struct sockaddr_in *a4 = (const struct sockaddr_in *)a;
    inet_ntop(AF_INET, &a4->sin_addr, ip, sizeof(ip));
    port = ntohs(a4->sin_port);
    snprintf(url, cap, "http://%s:%d/", ip, port);
}

/* The dashboard page, built once and shared by every request for "/". */
static struct MHD_Response *make_page(tp_buf *page) {
    if (tp_html_page(page) || page->failed) return NULL;
    struct MHD_Response *r =
        MHD_create_response_from_buffer_with_free_callback_cls(page->len, page->data, NULL, NULL);
    if (!r) return NULL;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    tp_serve_common_headers(r);
    return r;
}

static struct MHD_Daemon *start_daemon(tp_server *s, int listen_fd) {
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL,
                            tp_serve_handle, s, MHD_OPTION_LISTEN_SOCKET, listen_fd,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)SERVE_THREADS,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_CONNECTIONS,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_CONNECTION_MEMORY,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SERVE_TIMEOUT_S,
                            MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL, MHD_OPTION_END);
}

/* Runs the daemon until SIGINT or SIGTERM. The signals are blocked before its threads start
 * (they inherit the mask) and taken here with sigwait: no handler runs inside the server. */
static int run_until_signal(tp_server *s, int listen_fd, const char *url) {
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    signal(SIGPIPE, SIG_IGN);
    struct MHD_Daemon *d = start_daemon(s, listen_fd);
    if (!d) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        close(listen_fd);
        fprintf(stderr, "tprof: serve: cannot start the HTTP server\n");
        return -1;
    }
    printf("tprof serve: %s (serving %s; Ctrl-C stops)\n", url, s->dir);
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d); /* closes listen_fd; waits for the threads */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    fprintf(stderr, "tprof: serve: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    return 0;
}

/* Serves on the bound socket listen_fd (closed in every case) until a signal. */
static int serve_on(tp_server *s, int listen_fd, const struct sockaddr_storage *bound,
                    const char *host) {
    int status = -1;
    tp_buf page;
    tp_buf_init(&page);
    s->loopback = is_loopback((const struct sockaddr *)bound);
    s->cache = tp_serve_cache_new(SERVE_CACHE_BYTES, s->max_memory);
    s->page = s->cache ? make_page(&page) : NULL;
    if (!s->page) {
        fprintf(stderr, "tprof: serve: out of memory\n");
        close(listen_fd);
    } else {
        if (!s->loopback)
            fprintf(stderr,
                    "tprof: serve: %s is not a loopback address: anyone who can reach it can "
                    "read these profiles\n",
                    host);
        char url[INET6_ADDRSTRLEN + 32];
        format_url(bound, url, sizeof(url));
        status = run_until_signal(s, listen_fd, url);
    }
    /* the daemon has stopped: no response holds the page or a cached blob any more */
    if (s->page) MHD_destroy_response(s->page);
    tp_serve_cache_free(s->cache);
    tp_buf_free(&page);
    return status;
}

int tp_serve(const tp_serve_opts *o) {
    tp_server s = {.dir = o->dir, .max_memory = o->max_memory};
    s.root_fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s.root_fd < 0) {
        fprintf(stderr, "tprof: serve: %s: cannot read: %s\n", o->dir, strerror(errno));
        return -1;
    }
    if (tp_serve_is_run(s.root_fd))
        fprintf(stderr,
                "tprof: serve: %s is a run directory; the dashboard lists the runs *in* "
                "a folder: serve its parent folder\n",
                o->dir);
    struct sockaddr_storage bound;
    memset(&bound, 0, sizeof(bound));
    const char *host = o->host ? o->host : TP_SERVE_DEFAULT_HOST;
    int listen_fd = bind_address(host, o->port, &bound);
    int status = listen_fd >= 0 ? serve_on(&s, listen_fd, &bound, host) : -1;
    close(s.root_fd);
    return status;
}
