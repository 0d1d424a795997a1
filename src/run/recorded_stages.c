/* recorded_stages.c - the stages the inputs were recorded with (recorded_stages.h).
 *
 * A run keeps its configuration in config.json (config.rank<N>.json with several ranks: one
 * run's ranks share it, so the first in name order speaks for the run); only its stages key is
 * read (config/yaml.c), so a run of another tprof version reads too. */
#include "run/recorded_stages.h"

#include "config/config.h"
#include "run/rundir.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The folder of path, resolved (a trace named from inside its folder: "trace.json" in
 * RUN/tprof); malloc'd, NULL when it cannot be (*oom set when out of memory). */
static char *folder_of(const char *path, int *oom) {
    const char *slash = strrchr(path, '/');
    char *named = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    char *folder = named ? realpath(named, NULL) : NULL;
    *oom = !named || (!folder && errno == ENOMEM);
    free(named);
    return folder;
}

static int is_files_dir(const char *dir) {
    const char *slash = strrchr(dir, '/');
    return strcmp(slash ? slash + 1 : dir, TP_RUN_FILES_DIR) == 0;
}

/* The run directory of an input into *run: the input when it is a directory; for a trace file,
 * the folder above its tprof/ folder, or its own folder when that holds a tprof/ folder; NULL
 * for an input of no run (standard input, a trace elsewhere). 0, or -1 when out of memory. */
static int run_of(const char *input, char **run) {
    *run = NULL;
    if (strcmp(input, "-") == 0) return 0;
    if (tp_run_is_dir(input)) return (*run = strdup(input)) ? 0 : -1;
    int oom;
    char *folder = folder_of(input, &oom), *files = NULL;
    if (!folder) return oom ? -1 : 0;
    if (is_files_dir(folder)) {
        char *up = strrchr(folder, '/'); /* resolved: absolute */
        *run = up == folder ? strdup("/") : strndup(folder, (size_t)(up - folder));
        oom = !*run;
    } else if (!(files = tp_run_files_dir(folder))) {
        oom = 1;
    } else if (strcmp(files, folder) != 0) { /* it holds a tprof/ folder */
        *run = folder, folder = NULL;
    }
    free(folder);
    free(files);
    return oom ? -1 : 0;
}

/* The configuration of the run's first config file, holding its stages key, into *cfg (NULL
 * when the run has none: the default stages). 0; 1 when it cannot be read, said in warning; -1
 * when out of memory. */
static int run_config(const char *run, tprof_config **cfg, char *warning, size_t size) {
    *cfg = NULL;
    tp_run_dir d;
    char err[512];
    if (tp_run_dir_list(run, &d, err, sizeof(err))) return 0; /* its traces' read reports it */
    const char *path = NULL;
    for (size_t i = 0; i < d.n && !path; i++)
        if (d.files[i].kind == TP_RUN_CONFIG) path = d.files[i].path;
    int rc = 0;
    if (path && !(*cfg = tprof_config_new())) {
        rc = -1;
    } else if (path && tp_config_load_run_stages(*cfg, path)) {
        snprintf(warning, size, "%s", tprof_config_error(*cfg));
        rc = 1;
    }
    tp_run_dir_free(&d);
    return rc;
}

/* How many stages cfg holds (NULL: none, the default stages). */
static size_t count(const tprof_config *cfg) {
    return cfg ? cfg->nstages : 0;
}

static int same_stages(const tprof_config *a, const tprof_config *b) {
    if (count(a) != count(b)) return 0;
    for (size_t i = 0; i < count(a); i++)
        if (strcmp(a->stages[i], b->stages[i]) != 0) return 0;
    return 1;
}

/* The stages of cfg (taken by out) as definitions. The loader took only stages that parse
 * (tp_valid_stage), so a failure is out of memory: 0 or -1. */
static int take(tp_recorded_stages *out, tprof_config *cfg) {
    out->cfg = cfg;
    if (!(out->defs = calloc(cfg->nstages, sizeof(*out->defs)))) return -1;
    for (; out->n < cfg->nstages; out->n++)
        if (tp_stage_parse(cfg->stages[out->n], &out->defs[out->n])) return -1;
    return 0;
}

/* The stages of inputs[i] into *cfg (NULL: the default stages); as run_config returns. */
static int input_config(const char *input, tprof_config **cfg, char *warning, size_t size) {
    char *run;
    *cfg = NULL;
    if (run_of(input, &run)) return -1;
    int rc = run ? run_config(run, cfg, warning, size) : 0;
    free(run);
    return rc;
}

int tp_recorded_stages_find(const char *const *inputs, size_t n, tp_recorded_stages *out) {
    *out = (tp_recorded_stages){0};
    tprof_config *first = NULL; /* the first input's stages */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        tprof_config *cfg;
        rc = input_config(inputs[i], &cfg, out->warning, sizeof(out->warning));
        if (rc == 0 && i > 0 && !same_stages(first, cfg)) {
            snprintf(out->warning, sizeof(out->warning),
                     "%s and %s were recorded with different stages", tp_log_name(inputs[0]),
                     tp_log_name(inputs[i]));
            rc = 1;
        }
        if (i == 0)
            first = cfg;
        else
            tprof_config_free(cfg);
    }
    if (rc == 0 && count(first)) return take(out, first);
    tprof_config_free(first);
    return rc < 0 ? -1 : 0;
}

void tp_recorded_stages_free(tp_recorded_stages *s) {
    for (size_t i = 0; i < s->n; i++)
        free((void *)s->defs[i].patterns);
    free(s->defs);
    tprof_config_free(s->cfg);
    *s = (tp_recorded_stages){0};
}
