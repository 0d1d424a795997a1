/* fields.c - the parts of fields.h that are not on every member's path: the phase, counter
 * series. */
#include "trace/fields.h"

#include "util/vec.h"

const char *const tp_mem_keys[TP_NMEM] = {"Device Type", "Device Id", "Bytes", "Total Allocated",
                                          "Addr"};

void tp_ev_phase(tp_scan *sc, tp_evfields *f) {
    const tp_jstr *ph = tp_ev_str(f, TP_S_PH);
    size_t n = 0;
    const char *s = ph ? tp_scan_text(sc, ph, &n) : "";
    f->want = TP_W_NONE;
    if (n == 1) {
        switch (s[0]) {
        case 'X':
        case 'B':
            f->want = TP_W_RANGE;
            break;
        case 'i':
        case 'I':
            f->want = TP_W_MEMORY;
            break;
        case 'C':
            f->want = TP_W_COUNTER;
            break;
        case 'M':
            f->want = TP_W_META;
            break;
        default:
            break;
        }
    }
    /* E adds nothing itself but closes a B. */
    f->ph_unused = ph && f->want == TP_W_NONE && !(n == 1 && s[0] == 'E');
}

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
