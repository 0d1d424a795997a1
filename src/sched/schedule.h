/* schedule.h - which steps are recorded: torch.profiler.schedule's rule, epoch windows, or all.
 *
 * tp_schedule_action is the pure rule of docs/SEMANTICS.md §1; tp_sched is the small state machine
 * that tprof_step and tprof_epoch drive. Neither knows about threads or buffers. */
#ifndef TP_SCHED_SCHEDULE_H
#define TP_SCHED_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

/* What a step does, as torch.profiler.ProfilerAction: nothing, warm up (sources start, nothing
 * kept), record, or record and save the window at its end. */
typedef enum tp_action {
    TP_ACTION_NONE,
    TP_ACTION_WARMUP,
    TP_ACTION_RECORD,
    TP_ACTION_RECORD_AND_SAVE,
} tp_action;

typedef enum tp_sched_mode {
    TP_SCHED_ALL,    /* no schedule configured: one window from start to shutdown */
    TP_SCHED_STEPS,  /* torch.profiler.schedule */
    TP_SCHED_EPOCHS, /* epoch windows */
} tp_sched_mode;

typedef struct tp_schedule {
    tp_sched_mode mode;
    int64_t skip_first, wait, warmup, active, repeat; /* warmup serves both schedules */
    int skip_first_wait;
    const int64_t *epochs; /* the listed epochs (not owned) */
    size_t nepochs;
    int64_t epoch_steps; /* steps recorded per listed epoch; 0 = the rest of the epoch */
} tp_schedule;

/* The action of step k (k >= 0) under the step rule; RECORD for every step under TP_SCHED_ALL.
 * Under TP_SCHED_EPOCHS, k counts steps from the start of a listed epoch. */
tp_action tp_schedule_action(const tp_schedule *s, int64_t k);

/* The first recorded step of the step rule, or -1 if none is ever recorded. */
int64_t tp_schedule_first_recorded(const tp_schedule *s);

static inline int tp_action_records(tp_action a) {
    return a == TP_ACTION_RECORD || a == TP_ACTION_RECORD_AND_SAVE;
}
const char *tp_action_name(tp_action a);

/* The state machine: the current step, the current epoch, and the current step's action. */
typedef struct tp_sched {
    const tp_schedule *s;
    int64_t step;        /* the step now running (0 from the start) */
    int64_t epoch;       /* the epoch marked last; -1 before the first tprof_epoch */
    int64_t epoch_step0; /* the step at which that epoch began */
    int listed;          /* the current epoch is one of s->epochs */
    tp_action action;    /* of the current step */
} tp_sched;

void tp_sched_start(tp_sched *st, const tp_schedule *s);
/* Ends the current step and begins the next one; returns its action. */
tp_action tp_sched_step(tp_sched *st);
/* The current step becomes the first of `epoch`; returns its action (the step rule ignores
 * epochs and keeps its action). */
tp_action tp_sched_epoch(tp_sched *st, int64_t epoch);

#endif
