/* fields.c - the parts of fields.h that are not on every member's path: counter
 * series, the table of phases. */
#include "trace/fields.h"

#include "model/kineto.h"
#include "util/vec.h"

const char *const tp_mem_keys[TP_NMEM] = {tp_karg_device_type, tp_karg_device_id, tp_karg_bytes,
                                          tp_karg_total_allocated, tp_karg_addr};

/* E adds nothing itself but closes a B; the letters not named here add nothing. */
#define USED(want) (TP_PH_USED | (want))
const uint8_t tp_phase_letter[256] = {
    ['X'] = USED(TP_W_RANGE),  ['B'] = USED(TP_W_RANGE),   ['i'] = USED(TP_W_MEMORY),
    ['I'] = USED(TP_W_MEMORY), ['C'] = USED(TP_W_COUNTER), ['M'] = USED(TP_W_META),
    ['E'] = USED(TP_W_NONE),
};
#undef USED

const tp_jnum *tp_jval_number(tp_jval *v) {
    if (v->kind == TP_J_TOKEN) {
        /* A number when the grammar takes the whole token, as tp_scan_number decides. */
        const char *p = v->s.s, *end = p + v->s.len;
        v->kind = tp_jnum_parse(&p, &v->n) && p == end ? TP_J_NUMBER : TP_J_OTHER;
    }
    return v->kind == TP_J_NUMBER ? &v->n : NULL;
}

int tp_ev_series(tp_evread *er, const tp_jstr *key, tp_jval *v) {
    const tp_jnum *n = tp_jval_number(v);
    if (!n) return TP_SCAN_OK;
    if (TP_GROW(er->cargs, er->cap_cargs, er->ncargs + 1))
        return tp_scan_fail(er->sc, er->sc->p, "out of memory");
    er->cargs[er->ncargs++] = (struct tp_counter_arg){*key, *n};
    return TP_SCAN_OK;
}
