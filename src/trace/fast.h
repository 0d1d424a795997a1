/* fast.h - the fast path of the event reader: an event read from the structural index alone.
 *
 * Profilers write events in a few fixed shapes: `"key": value` members separated by a comma and
 * whitespace, keys without escapes, values that are strings, numbers, or an args object read
 * the same way. Such an event is read by walking the quote and bracket bits of the index: where
 * the next key begins comes from the quote mask, not from the length of the value before it, so
 * one member does not wait on the previous one, and what lies between (commas, whitespace) is
 * only checked. Anything else is declined and read by the general path (event.c), which also
 * gives every error; both fill tp_evfields through fields.h. */
#ifndef TP_TRACE_FAST_H
#define TP_TRACE_FAST_H

#include "trace/fields.h"

/* Neither OK, MORE, ITEM nor ERR: the general path must read the event. */
enum { TP_FAST_DECLINED = 3 };

/* The event object at er->sc->p (its '{') into f (cleared by the caller): TP_SCAN_OK with
 * sc->p past its '}', or TP_FAST_DECLINED (f and er->cargs then hold anything; sc->p is
 * unchanged). */
int tp_fast_event(tp_evread *er, tp_evfields *f);

#endif
