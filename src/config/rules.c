/* rules.c - the rules between keys: which schedule the keys select, the combinations that are
 * errors, and the note for keys given while profiling is off.
 *
 * The step schedule is selected by any of its keys, epoch windows by epochs (docs/CONFIG.md,
 * "Which schedule"); schedule_every_n_steps is the Hydra use case's cycle length, the same as
 * wait = N - warmup - active. A cycle the keys cannot hold is no error: a use case ships it, so
 * the closest schedule is profiled, with one line saying which. */
#include "config/table.h"

#include <assert.h>
#include <stdio.h>

/* The keys that select the step schedule (warmup is shared with epoch windows). */
static const int step_keys[] = {TP_KEY_SKIP_FIRST,      TP_KEY_WAIT,
                                TP_KEY_ACTIVE,          TP_KEY_REPEAT,
                                TP_KEY_SKIP_FIRST_WAIT, TP_KEY_SCHEDULE_EVERY_N_STEPS};
#define TP_NSTEP_KEYS (sizeof(step_keys) / sizeof(step_keys[0]))

static const char *origin(const tprof_config *cfg, int key) {
    return cfg->origin[key] ? cfg->origin[key] : "the default";
}

static int fail(char *err, size_t errlen) {
    tp_config_one_line(err, errlen);
    return -1;
}

/* The cycle schedule_every_n_steps = N asks for, as wait, warmup and active (docs/CONFIG.md,
 * "A cycle of N steps"): the key left out is computed (wait = N - warmup - active; with wait
 * given and active not, active = N - wait - warmup). Keys that cannot all hold are fitted to the
 * closest schedule that keeps the cycle of N: warmup and active as given, as far as they fit in
 * N, and wait the rest. Returns 1 when the keys given were fitted so, else 0. */
static int fit_cycle(const tprof_config *cfg, int64_t *wait, int64_t *warmup, int64_t *active) {
    int64_t n = cfg->schedule_every_n_steps;
    *wait = cfg->wait, *warmup = cfg->warmup, *active = cfg->active;
    if (!n) return 0;
    int has_wait = cfg->origin[TP_KEY_WAIT] != NULL,
        has_active = cfg->origin[TP_KEY_ACTIVE] != NULL;
    if (!has_wait && n - *warmup - *active >= 0) {
        *wait = n - *warmup - *active;
        return 0;
    }
    if (has_wait && !has_active && n - *wait - *warmup >= 1) {
        *active = n - *wait - *warmup;
        return 0;
    }
    if (has_wait && *wait + *warmup + *active == n) return 0;
    if (*warmup > n - 1) *warmup = n - 1;
    if (*active > n - *warmup) *active = n - *warmup;
    *wait = n - *warmup - *active;
    assert(*wait >= 0 && *warmup >= 0 && *active >= 1);
    return 1;
}

int tp_config_cycle_note(const tprof_config *cfg, char *note, size_t size) {
    int64_t wait, warmup, active;
    if (!fit_cycle(cfg, &wait, &warmup, &active)) return 0;
    snprintf(note, size,
             "profiling.schedule_every_n_steps = %lld (from %s) cannot hold wait %lld + warmup "
             "%lld + active %lld (from %s, %s, %s): profiling the closest schedule, a cycle of "
             "%lld steps with wait %lld, warmup %lld, active %lld",
             (long long)cfg->schedule_every_n_steps, origin(cfg, TP_KEY_SCHEDULE_EVERY_N_STEPS),
             (long long)cfg->wait, (long long)cfg->warmup, (long long)cfg->active,
             origin(cfg, TP_KEY_WAIT), origin(cfg, TP_KEY_WARMUP), origin(cfg, TP_KEY_ACTIVE),
             (long long)cfg->schedule_every_n_steps, (long long)wait, (long long)warmup,
             (long long)active);
    tp_config_one_line(note, size);
    return 1;
}

int tp_config_validate(const tprof_config *cfg, char *err, size_t errlen) {
    if (cfg->nepochs) {
        for (size_t i = 0; i < TP_NSTEP_KEYS; i++) {
            int k = step_keys[i];
            if (!cfg->origin[k]) continue;
            snprintf(err, errlen,
                     "invalid configuration: profiling.epochs (from %s) and profiling.%s (from %s) "
                     "cannot be combined: use either the step schedule or epoch windows",
                     origin(cfg, TP_KEY_EPOCHS), tp_config_keys[k].name, origin(cfg, k));
            return fail(err, errlen);
        }
    } else if (cfg->origin[TP_KEY_EPOCH_STEPS]) {
        snprintf(err, errlen,
                 "invalid configuration: profiling.epoch_steps (from %s) needs profiling.epochs",
                 origin(cfg, TP_KEY_EPOCH_STEPS));
        return fail(err, errlen);
    }
    return 0;
}

int tp_config_idle_note(const tprof_config *cfg, char *note, size_t size) {
    if (cfg->enabled) return 0;
    int first = -1, more = 0;
    for (int i = 0; i < TP_NKEYS; i++) {
        if (i == TP_KEY_ENABLED || !cfg->origin[i]) continue;
        if (first < 0)
            first = i;
        else
            more++;
    }
    if (first < 0) return 0;
    char why[256];
    if (cfg->origin[TP_KEY_ENABLED])
        snprintf(why, sizeof(why), "profiling.enabled is false, from %s",
                 cfg->origin[TP_KEY_ENABLED]);
    else
        snprintf(why, sizeof(why),
                 "profiling.enabled is not set: add --profile, "
                 "profiling.enabled=true or TPROF_ENABLED=1");
    char others[48] = "";
    if (more) snprintf(others, sizeof(others), " and %d other key%s", more, more > 1 ? "s" : "");
    snprintf(note, size,
             "profiling is off (%s): profiling.%s (from %s)%s given, nothing will be "
             "recorded",
             why, tp_config_keys[first].name, cfg->origin[first], others);
    tp_config_one_line(note, size);
    return 1;
}

void tp_config_schedule(const tprof_config *cfg, tp_schedule *s) {
    *s = (tp_schedule){.mode = TP_SCHED_ALL,
                       .skip_first = cfg->skip_first,
                       .wait = cfg->wait,
                       .warmup = cfg->warmup,
                       .active = cfg->active,
                       .repeat = cfg->repeat,
                       .skip_first_wait = cfg->skip_first_wait,
                       .epochs = cfg->epochs,
                       .nepochs = cfg->nepochs,
                       .epoch_steps = cfg->epoch_steps};
    for (size_t i = 0; i < TP_NSTEP_KEYS; i++)
        if (cfg->origin[step_keys[i]]) s->mode = TP_SCHED_STEPS;
    if (cfg->origin[TP_KEY_WARMUP]) s->mode = TP_SCHED_STEPS; /* epochs win below */
    fit_cycle(cfg, &s->wait, &s->warmup, &s->active);
    if (cfg->nepochs) s->mode = TP_SCHED_EPOCHS;
}
