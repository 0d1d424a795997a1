/* schedule.c - the step rule of docs/SEMANTICS.md §1 and the state machine around it. */
#include "sched/schedule.h"

/* Where step k falls in a cycle of wait, warmup and active steps. */
static tp_action cycle_action(int64_t wait, int64_t warmup, int64_t active, int64_t m) {
    if (m < wait) return TP_ACTION_NONE;
    if (m < wait + warmup) return TP_ACTION_WARMUP;
    return m < wait + warmup + active - 1 ? TP_ACTION_RECORD : TP_ACTION_RECORD_AND_SAVE;
}

tp_action tp_schedule_action(const tp_schedule *s, int64_t k) {
    if (k < 0) return TP_ACTION_NONE;
    switch (s->mode) {
    case TP_SCHED_ALL:
        return TP_ACTION_RECORD;
    case TP_SCHED_EPOCHS:
        /* An epoch is one cycle without its wait; epoch_steps 0 records until the epoch ends. */
        if (s->epoch_steps == 0) return k < s->warmup ? TP_ACTION_WARMUP : TP_ACTION_RECORD;
        if (k >= s->warmup + s->epoch_steps) return TP_ACTION_NONE;
        return cycle_action(0, s->warmup, s->epoch_steps, k);
    case TP_SCHED_STEPS:
        break;
    }
    if (k < s->skip_first) return TP_ACTION_NONE;
    int64_t st = k - s->skip_first;
    if (s->skip_first_wait) st += s->wait; /* only the first cycle loses its wait */
    int64_t n = s->wait + s->warmup + s->active;
    if (s->repeat > 0 && st / n >= s->repeat) return TP_ACTION_NONE;
    return cycle_action(s->wait, s->warmup, s->active, st % n);
}

int64_t tp_schedule_first_recorded(const tp_schedule *s) {
    if (s->mode != TP_SCHED_STEPS) return s->mode == TP_SCHED_ALL ? 0 : -1;
    return s->skip_first + (s->skip_first_wait ? 0 : s->wait) + s->warmup;
}

const char *tp_action_name(tp_action a) {
    switch (a) {
    case TP_ACTION_NONE:
        return "NONE";
    case TP_ACTION_WARMUP:
        return "WARMUP";
    case TP_ACTION_RECORD:
        return "RECORD";
    case TP_ACTION_RECORD_AND_SAVE:
        return "RECORD_AND_SAVE";
    }
    return "?";
}

static tp_action current_action(const tp_sched *st) {
    if (st->s->mode != TP_SCHED_EPOCHS) return tp_schedule_action(st->s, st->step);
    return st->listed ? tp_schedule_action(st->s, st->step - st->epoch_step0) : TP_ACTION_NONE;
}

void tp_sched_start(tp_sched *st, const tp_schedule *s) {
    *st = (tp_sched){.s = s, .epoch = -1};
    st->action = current_action(st);
}

tp_action tp_sched_step(tp_sched *st) {
    st->step++;
    return st->action = current_action(st);
}

tp_action tp_sched_epoch(tp_sched *st, int64_t epoch) {
    st->epoch = epoch;
    st->epoch_step0 = st->step;
    st->listed = 0;
    for (size_t i = 0; i < st->s->nepochs; i++)
        st->listed |= st->s->epochs[i] == epoch;
    return st->action = current_action(st);
}
