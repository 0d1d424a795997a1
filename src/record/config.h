/* config.h - the configuration's fields and the internal entry points of its sources.
 *
 * One table of keys (config.c) drives every source: tprof_config_set, the YAML file
 * (config_yaml.c), the environment and the command line. Each key remembers the source that set
 * it last, so that errors, including those between keys, name where a value came from. */
#ifndef TP_CONFIG_H
#define TP_CONFIG_H

#include "tprof.h"

#include "record/schedule.h"

#include <stddef.h>
#include <stdint.h>

enum tp_gpu_mode { TP_GPU_AUTO, TP_GPU_ON, TP_GPU_OFF };

enum tp_config_key {
    TP_KEY_ENABLED,
    TP_KEY_OUTPUT_DIR,
    TP_KEY_RUN_ID,
    TP_KEY_SKIP_FIRST,
    TP_KEY_WAIT,
    TP_KEY_WARMUP,
    TP_KEY_ACTIVE,
    TP_KEY_REPEAT,
    TP_KEY_SKIP_FIRST_WAIT,
    TP_KEY_EPOCHS,
    TP_KEY_EPOCH_STEPS,
    TP_KEY_RECORD_SHAPES,
    TP_KEY_PROFILE_MEMORY,
    TP_KEY_WITH_FLOPS,
    TP_KEY_STAGES,
    TP_KEY_GZIP,
    TP_KEY_TENSORBOARD_NAMES,
    TP_KEY_MAX_EVENTS,
    TP_KEY_SUMMARY,
    TP_KEY_TOP_K,
    TP_KEY_CONFIG,
    TP_KEY_SIGNALS,
    TP_KEY_GPU,
    TP_KEY_NSIGHT,
    TP_KEY_FLUSH_TIMEOUT_MS,
    TP_NKEYS
};

struct tprof_config {
    int enabled;
    char *output_dir;
    char *run_id;
    int64_t skip_first, wait, warmup, active, repeat;
    int skip_first_wait;
    int64_t *epochs;
    size_t nepochs;
    int64_t epoch_steps;
    int record_shapes, profile_memory, with_flops;
    char **stages; /* "name" or "name=pattern|pattern" */
    size_t nstages;
    int gzip, tensorboard_names;
    int64_t max_events;
    int summary;
    int64_t top_k;
    char *config; /* the YAML file, NULL when none */
    int signals;
    int gpu; /* tp_gpu_mode */
    int nsight;
    int64_t flush_timeout_ms; /* a signal's flush ends within it (signals.c) */
    char *origin[TP_NKEYS];   /* where each key was set last; NULL = the built-in default */
    char err[512];
};

/* A whole decimal integer, optionally signed; 0, or -1 when s is anything else. */
int tp_parse_int(const char *s, int64_t *out);
/* Sets one key from text (a YAML scalar, an environment value, an argument). key is the bare
 * name (len bytes); source names the origin in messages. 0, or -1 with cfg->err set. */
int tp_config_apply(tprof_config *cfg, const char *key, size_t len, const char *value,
                    const char *source);
/* Sets a list key from items (a YAML sequence); a scalar key given a list is an error. */
int tp_config_apply_list(tprof_config *cfg, const char *key, size_t len, const char *const *items,
                         size_t n, const char *source);
/* The error for a value no key accepts (a nested YAML value): unknown key or invalid value. */
int tp_config_reject(tprof_config *cfg, const char *key, size_t len, const char *shown,
                     const char *source);
/* The checks between keys (both schedules, epoch_steps without epochs). 0, or -1 with err. */
int tp_config_validate(const tprof_config *cfg, char *err, size_t errlen);
tprof_config *tp_config_dup(const tprof_config *cfg);
/* The schedule cfg describes; s->epochs points into cfg. */
void tp_config_schedule(const tprof_config *cfg, tp_schedule *s);
/* The YAML file named by --profiling.config among argv (not consumed), else by TPROF_CONFIG,
 * else NULL. */
const char *tp_config_find_path(int argc, char **argv);
/* Every source after the defaults, as tprof_init reads them: the YAML file of
 * tp_config_find_path, the environment, then argv (consumed; argc/argv may be NULL). All run;
 * 0, or -1 with cfg->err holding the first error. */
int tp_config_load_sources(tprof_config *cfg, int *argc, char **argv);

#endif
