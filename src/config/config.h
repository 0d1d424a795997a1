/* config.h - the configuration's fields and the entry points the rest of the library uses.
 *
 * The keys are one list (keys.h); the table generated from it (config.c) drives every source:
 * tprof_config_set, the YAML file (yaml.c), the environment (env.c) and the command line
 * (argv.c). Each key remembers the source that set it last, so that errors, including those
 * between keys, name where a value came from. */
#ifndef TP_CONFIG_CONFIG_H
#define TP_CONFIG_CONFIG_H

#include "tprof.h"

#include "config/keys.h"
#include "config/parse.h"
#include "sched/schedule.h"

#include <stddef.h>
#include <stdint.h>

enum tp_gpu_mode { TP_GPU_AUTO, TP_GPU_ON, TP_GPU_OFF };
/* The `cuda_graphs` key (the same list's order): how CUPTI traces CUDA graphs, each node's
 * kernel, copy and set, or one record per launch. */
enum tp_graphs_mode { TP_GRAPHS_NODE, TP_GRAPHS_GRAPH };
/* The `clock` key (keys.h's TP_CONFIG_CHOICES, same order; record/clock.h). */
enum tp_clock_mode { TP_CLOCK_AUTO, TP_CLOCK_TSC, TP_CLOCK_MONOTONIC };
/* The `trace_format` key (the same list's order). */
enum tp_trace_format { TP_TRACE_JSON, TP_TRACE_PERFETTO };
/* The `record_ops` key (the same list's order): torch's ops recorded by tprof.torch; auto, with a
 * model given and under `tprof run` (python/tprof/torch/_parts.py). */
enum tp_record_ops { TP_RECORD_OPS_AUTO, TP_RECORD_OPS_ON, TP_RECORD_OPS_OFF };

#define TP_CONFIG_ENUM(ID, name, type, min, max, deflt) TP_KEY_##ID,
enum tp_config_key { TP_CONFIG_KEYS(TP_CONFIG_ENUM) TP_NKEYS };
#undef TP_CONFIG_ENUM

/* One field per key of keys.h, named as the key (the table's offsetof checks it). */
struct tprof_config {
    int enabled;
    char *output_dir;
    char *run_id;
    int64_t skip_first, wait, warmup, active, repeat;
    int skip_first_wait;
    int64_t schedule_every_n_steps; /* 0: the cycle is wait + warmup + active */
    int64_t *epochs;
    size_t nepochs;
    int64_t epoch_steps;
    int record_shapes, profile_memory, with_flops;
    int with_stack;   /* Python call stacks (the extension) */
    int with_modules; /* module ranges (tprof.torch) */
    int record_ops;   /* tp_record_ops (tprof.torch) */
    char **stages;    /* "name" or "name=pattern|pattern" */
    size_t nstages;
    int gzip, tensorboard_names;
    int trace_format; /* tp_trace_format */
    int clock;        /* tp_clock_mode */
    int64_t max_events;
    int stream; /* windows written while they record (record/window.h, tp_wstream) */
    int summary;
    int html_report; /* report.html in the run directory at shutdown */
    int64_t top_k;
    char *config; /* the YAML file, NULL when none */
    int signals;
    int64_t flush_timeout_ms; /* the most a flush on SIGTERM/SIGINT may take */
    int gpu;                  /* tp_gpu_mode */
    int cuda_graphs;          /* tp_graphs_mode */
    double peak_tflops;       /* 0: from the device table */
    int nsight;
    char *nsight_output; /* NULL when none */
    /* the flight recorder (docs/FLIGHT.md) */
    int flight_recorder, flight_signal; /* flight_signal: SIGUSR1 saves the ring */
    int64_t flight_steps;               /* steps kept before the current one */
    double slow_step_factor;            /* a step this many times the median is slow; 0: never */
    int64_t flight_warmup_steps;        /* steps before the slow-step trigger arms */
    int64_t flight_cooldown_steps, flight_max_saves;
    char *origin[TP_NKEYS]; /* where each key was set last; NULL = the built-in default */
    char err[512];
};

/* Sets one key from text (a YAML scalar, an environment value, an argument). key is the name or
 * an alias (len bytes); source names the origin in messages. 0, or -1 with cfg->err set. */
int tp_config_apply(tprof_config *cfg, const char *key, size_t len, const char *value,
                    const char *source);
/* Sets a list key from items (a YAML sequence); a scalar key given a list is an error. */
int tp_config_apply_list(tprof_config *cfg, const char *key, size_t len, const char *const *items,
                         size_t n, const char *source);
/* The error for a value no key accepts (a nested YAML value): unknown key or invalid value. */
int tp_config_reject(tprof_config *cfg, const char *key, size_t len, const char *shown,
                     const char *source);
/* The name of the key that key (len bytes: a key's own name or an alias) sets, and in *is_bool
 * whether its value is a boolean; NULL when key names none (`tprof run` spells it TPROF_<KEY>). */
const char *tp_config_key_name(const char *key, size_t len, int *is_bool);
/* The source that set key (len bytes; a name or an alias) last: NULL for the built-in default
 * (or no such key). tprof.profile gives ranks a shared run_id only in place of the default. */
const char *tp_config_origin(const tprof_config *cfg, const char *key, size_t len);
/* The checks between keys (both schedules, epoch_steps without epochs). 0, or -1 with err. */
int tp_config_validate(const tprof_config *cfg, char *err, size_t errlen);
/* When cfg is disabled but other keys were given: 1 and, in note, the one line that says nothing
 * will be recorded and why; else 0. */
int tp_config_idle_note(const tprof_config *cfg, char *note, size_t size);
/* When schedule_every_n_steps cannot hold the wait, warmup and active given: 1 and, in note,
 * the one line naming them and the closest schedule, the one tp_config_schedule gives; else 0. */
int tp_config_cycle_note(const tprof_config *cfg, char *note, size_t size);
tprof_config *tp_config_dup(const tprof_config *cfg);
/* The schedule cfg describes; s->epochs points into cfg. Expects tp_config_validate passed. */
void tp_config_schedule(const tprof_config *cfg, tp_schedule *s);
/* The YAML file named by --profiling.config among argv (not consumed), else by TPROF_CONFIG,
 * else NULL. */
const char *tp_config_find_path(int argc, char **argv);
/* Every source after the defaults, as tprof_init reads them: the YAML file of
 * tp_config_find_path, the environment, then argv (consumed; argc/argv may be NULL). All run;
 * 0, or -1 with cfg->err holding the first error. */
int tp_config_load_sources(tprof_config *cfg, int *argc, char **argv);
/* The stages key of a run's config.json (tprof_config_to_json's mapping of every key, which
 * libyaml reads as YAML's flow form) into cfg; the other keys are skipped, so the file of another
 * tprof version reads too, and a file without the key leaves cfg as it was. 0, or -1 with
 * cfg->err naming the file, line and column (yaml.c). */
int tp_config_load_run_stages(tprof_config *cfg, const char *path);

#endif
