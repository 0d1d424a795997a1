/* fields.c - the meaning of an event's keys and of the values they hold (see fields.h). When a
 * key comes twice, the last value wins, as in Python's json module. */
#include "trace/fields.h"

#include "util/vec.h"

#include <string.h>

const char *const tp_mem_keys[TP_NMEM] = {"Device Type", "Device Id", "Bytes", "Total Allocated",
                                          "Addr"};

void tp_evfields_clear(tp_evfields *f) {
    f->ph.s = f->name.s = f->cat.s = f->meta_name.s = NULL;
    f->want = TP_W_NONE;
    f->has_ts = f->has_dur = f->has_flops = f->args_read = f->ph_unused = 0;
    f->pid.kind = f->tid.kind = TP_ID_ABSENT;
    f->args = NULL;
    f->corr = 0;
    f->mem_mask = 0;
}

int tp_ev_set_arg(tp_evread *er, tp_evfields *f, int use, const tp_jstr *key, const tp_jval *v) {
    int num = v->kind == TP_J_NUMBER;
    double d;
    switch (use) {
    case TP_A_CORR:
        /* An integer id; anything else means none. */
        if (!num || tp_jnum_value(er->sc, &v->n, &f->corr, &d) != 1) f->corr = 0;
        break;
    case TP_A_FLOPS:
        f->flops = v->n;
        f->has_flops = num;
        break;
    case TP_A_SERIES:
        if (!num) break;
        if (TP_GROW(er->cargs, er->cap_cargs, er->ncargs + 1))
            return tp_scan_fail(er->sc, er->sc->p, "out of memory");
        er->cargs[er->ncargs++] = (struct tp_counter_arg){*key, v->n};
        break;
    case TP_A_META_NAME:
        f->meta_name = tp_ev_string_of(v);
        break;
    default: /* TP_A_MEM + i */
        if (use < TP_A_MEM || use >= TP_A_MEM + TP_NMEM) break;
        f->mem[use - TP_A_MEM] = v->n;
        if (num)
            f->mem_mask |= 1u << (use - TP_A_MEM);
        else
            f->mem_mask &= ~(1u << (use - TP_A_MEM));
        break;
    }
    return TP_SCAN_OK;
}
