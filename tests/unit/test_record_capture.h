/* test_record_capture.h - a sink that keeps every model a session delivers, for the recorder's
 * tests, and small queries over them. Header-only: each test program includes it once. */
#ifndef TEST_RECORD_CAPTURE_H
#define TEST_RECORD_CAPTURE_H

#include "model/model.h"
#include "record/sink.h"

#include "tprof.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CAP_MAX = 64 };

/* Each test program uses some of these helpers. */
#define CAP_FN static __attribute__((unused))

typedef struct capture {
    pthread_mutex_t lock;
    tp_model *models[CAP_MAX];
    tp_window_info info[CAP_MAX];
    char names[CAP_MAX][64];
    size_t n;
    int started, finished;
    tp_run_info run; /* as given to finish (strings not kept) */
    char run_dir[256];
    char *config_json; /* as given to start */
    char reason[512];
} capture;

static capture cap = {.lock = PTHREAD_MUTEX_INITIALIZER};

CAP_FN int cap_start(void *ctx, const tp_run_info *run) {
    (void)ctx;
    cap.started++;
    snprintf(cap.run_dir, sizeof(cap.run_dir), "%s", run->run_dir);
    free(cap.config_json);
    cap.config_json = strdup(run->config_json);
    return 0;
}

CAP_FN void cap_window(void *ctx, tp_model *m, const tp_window_info *w) {
    (void)ctx;
    pthread_mutex_lock(&cap.lock);
    if (cap.n < CAP_MAX) {
        cap.models[cap.n] = m;
        cap.info[cap.n] = *w;
        snprintf(cap.names[cap.n], sizeof(cap.names[0]), "%s", w->name);
        cap.info[cap.n].name = cap.names[cap.n];
        cap.n++;
    } else {
        tp_model_free(m);
        free(m);
    }
    pthread_mutex_unlock(&cap.lock);
}

CAP_FN void cap_finish(void *ctx, const tp_run_info *run) {
    (void)ctx;
    cap.finished++;
    cap.run = *run;
    snprintf(cap.reason, sizeof(cap.reason), "%s",
             run->no_window_reason ? run->no_window_reason : "");
    cap.run.no_window_reason = cap.reason;
}

CAP_FN void cap_reset(void) {
    for (size_t i = 0; i < cap.n; i++) {
        tp_model_free(cap.models[i]);
        free(cap.models[i]);
    }
    cap.n = 0;
    cap.started = cap.finished = 0;
    free(cap.config_json);
    cap.config_json = NULL;
    cap.reason[0] = '\0';
}

CAP_FN void cap_install(void) {
    static const tp_sink sink = {.start = cap_start, .window = cap_window, .finish = cap_finish};
    cap_reset();
    tp_session_set_sink(&sink);
}

CAP_FN const char *ev_name(const tp_model *m, const tp_event *ev) {
    return tp_model_str(m, ev->name);
}

/* The number of events of model m named `name` (any kind). */
CAP_FN size_t count_named(const tp_model *m, const char *name) {
    size_t n = 0;
    for (size_t i = 0; i < m->nevents; i++)
        n += strcmp(ev_name(m, &m->events[i]), name) == 0;
    return n;
}

CAP_FN const tp_event *find_named(const tp_model *m, const char *name) {
    for (size_t i = 0; i < m->nevents; i++)
        if (strcmp(ev_name(m, &m->events[i]), name) == 0) return &m->events[i];
    return NULL;
}

CAP_FN const tp_arg *arg_of(const tp_model *m, const tp_event *ev, const char *key) {
    tp_str k = tp_strtab_find(&m->strings, key, strlen(key));
    return k == UINT32_MAX ? NULL : tp_event_arg(m, ev, k);
}

/* One step holding one range of a name made at run time, e.g. "work_%d". */
__attribute__((format(printf, 1, 2))) CAP_FN void step_with_range(const char *fmt, ...) {
    char name[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    tprof_begin_copy(name);
    tprof_end();
    tprof_step();
}

/* A tprof config with the given key=value pairs (NULL-terminated), enabled. */
CAP_FN tprof_config *cfg_of(const char *const *kv) {
    tprof_config *c = tprof_config_new();
    tprof_config_set(c, "enabled", "true");
    tprof_config_set(c, "signals", "false");
    for (; kv && kv[0]; kv += 2)
        if (tprof_config_set(c, kv[0], kv[1])) {
            fprintf(stderr, "config: %s\n", tprof_config_error(c));
            abort();
        }
    return c;
}

/* Starts a session configured by kv with the capturing sink. */
CAP_FN int start_with(const char *const *kv) {
    cap_install();
    tprof_config *c = cfg_of(kv);
    int rc = tprof_start(c);
    tprof_config_free(c);
    return rc;
}

#endif
