/* keys.h - every configuration key, once.
 *
 * TP_CONFIG_KEYS is the one list of keys: the enum tp_config_key (config.h), the key table that
 * every source parses through (config.c) and the documentation check
 * (tests/unit/test_config_sources.c: every key here is in docs/CONFIG.md and every key documented
 * there is here) are generated from it, so they cannot drift apart. Each entry is
 *
 *     X(ID, name, type, min, max, default)
 *
 * name is the key and the field of struct tprof_config that holds it (config.h); type is one of
 * enum tp_key_type; min and max bound an integer (TP_T_INT, and the items of TP_T_INTS); default is
 * the built-in value as text, parsed like any other value, or NULL for none (run_id's default is
 * computed by tprof_config_new). A new key is one line here, its field in config.h and its row in
 * docs/CONFIG.md.
 *
 * TP_CONFIG_ALIASES lists the other names a key answers to (the names of the use cases'
 * configurations: Hydra's *_steps, the decorator's nsight_enabled, the Lightning callback's
 * keywords, which callbacks.profiler.<key>=<value> overrides name): X(alias, ID). An alias sets its
 * key, with the same rule and origin. */
#ifndef TP_CONFIG_KEYS_H
#define TP_CONFIG_KEYS_H

#include <stdint.h>

/* How a key's value is written and checked (parse.c). */
enum tp_key_type {
    TP_T_BOOL,   /* int: true/false, 1/0, yes/no, on/off (any case) */
    TP_T_INT,    /* int64_t in [min, max] */
    TP_T_DOUBLE, /* double: a finite decimal >= 0 */
    TP_T_STR,    /* char *: not empty */
    TP_T_NAME,   /* char *: one plain path component (tp_plain_name, parse.h) */
    TP_T_INTS,   /* int64_t * with its count: the items in [min, max] */
    TP_T_STRS,   /* char ** with its count: stage definitions */
    TP_T_GPU,    /* int: enum tp_gpu_mode */
    TP_T_CHOICE  /* int: the index of one of its names, TP_CONFIG_CHOICES[min] */
};

/* The names a TP_T_CHOICE key takes, one list per key, its index the key's min; the field holds
 * the index of the name given (config.h's enum for the key spells them in the same order). */
#define TP_CHOICES_CLOCK        0
#define TP_CHOICES_TRACE_FORMAT 1
#define TP_CHOICES_CUDA_GRAPHS  2
#define TP_CHOICES_RECORD_OPS   3
#define TP_CONFIG_CHOICES                                                                          \
    {                                                                                              \
        {"auto", "tsc", "monotonic", NULL}, {"json", "perfetto", NULL, NULL},                      \
            {"node", "graph", NULL, NULL}, {                                                       \
            "auto", "on", "off", NULL                                                              \
        }                                                                                          \
    }

/* The largest count of steps, epochs or cycles. */
#define TP_MAX_COUNT INT64_C(1000000000)

#define TP_CONFIG_KEYS(X)                                                                          \
    X(ENABLED, enabled, TP_T_BOOL, 0, 0, "false")                                                  \
    X(OUTPUT_DIR, output_dir, TP_T_STR, 0, 0, "tprof_runs")                                        \
    X(RUN_ID, run_id, TP_T_NAME, 0, 0, NULL)                                                       \
    X(SKIP_FIRST, skip_first, TP_T_INT, 0, TP_MAX_COUNT, "0")                                      \
    X(WAIT, wait, TP_T_INT, 0, TP_MAX_COUNT, "0")                                                  \
    X(WARMUP, warmup, TP_T_INT, 0, TP_MAX_COUNT, "0")                                              \
    X(ACTIVE, active, TP_T_INT, 1, TP_MAX_COUNT, "1")                                              \
    X(REPEAT, repeat, TP_T_INT, 0, TP_MAX_COUNT, "0")                                              \
    X(SKIP_FIRST_WAIT, skip_first_wait, TP_T_BOOL, 0, 0, "false")                                  \
    X(SCHEDULE_EVERY_N_STEPS, schedule_every_n_steps, TP_T_INT, 0, TP_MAX_COUNT, "0")              \
    X(EPOCHS, epochs, TP_T_INTS, 0, TP_MAX_COUNT, "")                                              \
    X(EPOCH_STEPS, epoch_steps, TP_T_INT, 0, TP_MAX_COUNT, "0")                                    \
    X(RECORD_SHAPES, record_shapes, TP_T_BOOL, 0, 0, "false")                                      \
    X(PROFILE_MEMORY, profile_memory, TP_T_BOOL, 0, 0, "false")                                    \
    X(WITH_FLOPS, with_flops, TP_T_BOOL, 0, 0, "true")                                             \
    X(WITH_STACK, with_stack, TP_T_BOOL, 0, 0, "false")                                            \
    X(WITH_MODULES, with_modules, TP_T_BOOL, 0, 0, "true")                                         \
    X(RECORD_OPS, record_ops, TP_T_CHOICE, TP_CHOICES_RECORD_OPS, 0, "auto")                       \
    X(STAGES, stages, TP_T_STRS, 0, 0, "")                                                         \
    X(GZIP, gzip, TP_T_BOOL, 0, 0, "false")                                                        \
    X(TRACE_FORMAT, trace_format, TP_T_CHOICE, TP_CHOICES_TRACE_FORMAT, 0, "json")                 \
    X(TENSORBOARD_NAMES, tensorboard_names, TP_T_BOOL, 0, 0, "false")                              \
    X(MAX_EVENTS, max_events, TP_T_INT, 16, INT64_C(1) << 40, "4194304")                           \
    X(STREAM, stream, TP_T_BOOL, 0, 0, "false")                                                    \
    X(SUMMARY, summary, TP_T_BOOL, 0, 0, "true")                                                   \
    X(TOP_K, top_k, TP_T_INT, 1, 100000, "10")                                                     \
    X(HTML_REPORT, html_report, TP_T_BOOL, 0, 0, "true")                                           \
    X(CONFIG, config, TP_T_STR, 0, 0, NULL)                                                        \
    X(SIGNALS, signals, TP_T_BOOL, 0, 0, "true")                                                   \
    X(FLUSH_TIMEOUT_MS, flush_timeout_ms, TP_T_INT, 1, 3600000, "5000")                            \
    X(GPU, gpu, TP_T_GPU, 0, 0, "auto")                                                            \
    X(CUDA_GRAPHS, cuda_graphs, TP_T_CHOICE, TP_CHOICES_CUDA_GRAPHS, 0, "node")                    \
    X(PEAK_TFLOPS, peak_tflops, TP_T_DOUBLE, 0, 0, "0")                                            \
    X(NSIGHT, nsight, TP_T_BOOL, 0, 0, "false")                                                    \
    X(NSIGHT_OUTPUT, nsight_output, TP_T_STR, 0, 0, NULL)                                          \
    X(CLOCK, clock, TP_T_CHOICE, TP_CHOICES_CLOCK, 0, "auto")                                      \
    /* the flight recorder (docs/FLIGHT.md) */                                                     \
    X(FLIGHT_RECORDER, flight_recorder, TP_T_BOOL, 0, 0, "false")                                  \
    X(FLIGHT_STEPS, flight_steps, TP_T_INT, 1, 100000, "20")                                       \
    X(SLOW_STEP_FACTOR, slow_step_factor, TP_T_DOUBLE, 0, 0, "3.0")                                \
    X(FLIGHT_WARMUP_STEPS, flight_warmup_steps, TP_T_INT, 0, TP_MAX_COUNT, "50")                   \
    X(FLIGHT_COOLDOWN_STEPS, flight_cooldown_steps, TP_T_INT, 0, TP_MAX_COUNT, "100")              \
    X(FLIGHT_MAX_SAVES, flight_max_saves, TP_T_INT, 0, 1000000, "10")                              \
    X(FLIGHT_SIGNAL, flight_signal, TP_T_BOOL, 0, 0, "false")

#define TP_CONFIG_ALIASES(X)                                                                       \
    X(wait_steps, WAIT)                                                                            \
    X(warmup_steps, WARMUP)                                                                        \
    X(active_steps, ACTIVE)                                                                        \
    X(repeat_cycles, REPEAT)                                                                       \
    X(profile_epochs, EPOCHS)                                                                      \
    X(profile_steps, EPOCH_STEPS)                                                                  \
    X(log_top_k_ops, TOP_K)                                                                        \
    X(nsight_enabled, NSIGHT)

#endif
