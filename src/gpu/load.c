/* load.c - finding libcupti and resolving its functions (search order in cupti_api.h).
 *
 * The library is never unloaded: CUPTI starts threads of its own, and unloading their code under
 * them would crash the host at exit. A later session finds it again as "already loaded". */
#include "gpu/cupti_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const lib_names[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12",
                                        "libcupti.so.11"};
enum { NLIB_NAMES = sizeof(lib_names) / sizeof(lib_names[0]) };

int tp_dlsym_fn(void *handle, const char *name, void *fn_ptr) {
    void *sym = dlsym(handle, name);
    memcpy(fn_ptr, &sym, sizeof(sym));
    return sym ? 0 : -1;
}

/* Resolves the table; on a missing required function names it in why. */
static int resolve(tp_cupti_api *a, char *why, size_t n) {
    struct {
        const char *name;
        void *fn;
        int required;
    } syms[] = {
        {"cuptiGetVersion", &a->GetVersion, 0},
        {"cuptiSubscribe", &a->Subscribe, 1},
        {"cuptiSubscribe_v2", &a->Subscribe_v2, 0},
        {"cuptiUnsubscribe", &a->Unsubscribe, 1},
        {"cuptiEnableCallback", &a->EnableCallback, 0},
        {"cuptiActivityEnable", &a->ActivityEnable, 1},
        {"cuptiActivityDisable", &a->ActivityDisable, 1},
        {"cuptiActivityEnableRuntimeApi", &a->ActivityEnableRuntimeApi, 0},
        {"cuptiActivityRegisterCallbacks", &a->ActivityRegisterCallbacks, 1},
        {"cuptiActivityRegisterTimestampCallback", &a->ActivityRegisterTimestampCallback, 0},
        {"cuptiActivityFlushAll", &a->ActivityFlushAll, 1},
        {"cuptiActivityGetNextRecord", &a->ActivityGetNextRecord, 1},
        {"cuptiActivityGetNumDroppedRecords", &a->ActivityGetNumDroppedRecords, 1},
        {"cuptiGetResultString", &a->GetResultString, 1},
        {"cuptiGetCallbackName", &a->GetCallbackName, 0},
        {"cuptiSetThreadIdType", &a->SetThreadIdType, 0},
        {"cuptiGetTimestamp", &a->GetTimestamp, 0},
        {"cuptiActivityPushExternalCorrelationId", &a->ActivityPushExternalCorrelationId, 0},
        {"cuptiActivityPopExternalCorrelationId", &a->ActivityPopExternalCorrelationId, 0},
    };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
        if (tp_dlsym_fn(a->handle, syms[i].name, syms[i].fn) && syms[i].required) {
            snprintf(why, n, "%s lacks %s (not a CUPTI library?)", a->path, syms[i].name);
            return -1;
        }
    return 0;
}

/* Search state: the first load error seen (a file that exists but does not load), and the list
 * of places tried, for the one-line message. */
typedef struct search {
    tp_cupti_api *api;
    char error[512];
    char places[512];
} search;

static void note_place(search *s, const char *place) {
    size_t len = strlen(s->places);
    snprintf(s->places + len, sizeof(s->places) - len, "%s%s", len ? ", " : "", place);
}

static int try_open(search *s, const char *path, int flags) {
    void *h = dlopen(path, flags);
    if (h) {
        s->api->handle = h;
        snprintf(s->api->path, sizeof(s->api->path), "%.*s", (int)sizeof(s->api->path) - 1, path);
        return 1;
    }
    /* a file that exists but does not load is worth naming; a missing one is not */
    const char *err = dlerror();
    int missing = strchr(path, '/') ? access(path, F_OK) != 0 : !err || strstr(err, "No such file");
    if (!(flags & RTLD_NOLOAD) && !missing && !s->error[0])
        snprintf(s->error, sizeof(s->error), "cannot load %s: %s", path, err ? err : "?");
    return 0;
}

static int try_dir(search *s, const char *dir, const char *sub, const char *label) {
    char path[1024];
    if (!dir || !dir[0]) return 0;
    note_place(s, label);
    for (int i = 0; i < NLIB_NAMES; i++) {
        snprintf(path, sizeof(path), "%s%s/%s", dir, sub, lib_names[i]);
        if (try_open(s, path, RTLD_NOW | RTLD_LOCAL)) return 1;
    }
    return 0;
}

static int try_cuda_home(search *s, const char *home, const char *label) {
    char place[600];
    snprintf(place, sizeof(place), "%s/extras/CUPTI/lib64", label);
    if (try_dir(s, home, "/extras/CUPTI/lib64", place)) return 1;
    snprintf(place, sizeof(place), "%s/lib64", label);
    return try_dir(s, home, "/lib64", place);
}

static int search_all(search *s, const char *const *extra_dirs) {
    for (int i = 0; i < NLIB_NAMES; i++)
        if (try_open(s, lib_names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return 1;
    const char *home = getenv("CUDA_HOME");
    if (home && try_cuda_home(s, home, "$CUDA_HOME")) return 1;
#ifdef TPROF_CUDA_HOME
    if (try_cuda_home(s, TPROF_CUDA_HOME, TPROF_CUDA_HOME)) return 1;
#endif
    note_place(s, "the default library path");
    for (int i = 0; i < NLIB_NAMES; i++)
        if (try_open(s, lib_names[i], RTLD_NOW | RTLD_LOCAL)) return 1;
    for (size_t i = 0; extra_dirs && extra_dirs[i]; i++)
        if (try_dir(s, extra_dirs[i], "", extra_dirs[i])) return 1;
    return 0;
}

tp_cupti_load_status tp_cupti_load(tp_cupti_api *api, const char *explicit_path,
                                   const char *const *extra_dirs, char *why, size_t whylen) {
    memset(api, 0, sizeof(*api));
    search s = {.api = api};
    int explicit = explicit_path && explicit_path[0];
    int found =
        explicit ? try_open(&s, explicit_path, RTLD_NOW | RTLD_LOCAL) : search_all(&s, extra_dirs);
    if (!found) {
        if (s.error[0])
            snprintf(why, whylen, "%s", s.error);
        else if (explicit)
            snprintf(why, whylen, "cannot load %s: no such file", explicit_path);
        else
            snprintf(why, whylen, "no libcupti found (searched %s)", s.places);
        return explicit || s.error[0] ? TP_CUPTI_BROKEN : TP_CUPTI_NOT_FOUND;
    }
    if (resolve(api, why, whylen)) {
        dlclose(api->handle); /* not CUPTI: nothing of it ran, so unloading is safe */
        api->handle = NULL;
        return TP_CUPTI_BROKEN;
    }
    return TP_CUPTI_LOADED;
}

const char *tp_cupti_result_str(const tp_cupti_api *api, CUptiResult r, char *buf, size_t n) {
    const char *s = NULL;
    if (api->GetResultString && api->GetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
    snprintf(buf, n, "CUPTI error %d", (int)r);
    return buf;
}
