/* api.c - the annotation calls: FLOPs, args and shapes on the innermost range, counters, memory
 * events and thread names. Each appends records to the calling thread's chunk like a range does;
 * strings are copied into the thread's intern table first. */
#include "tprof.h"

#include "model/kineto.h"
#include "record/gpu_calls.h"
#include "record/inputs.h"
#include "record/memory.h"
#include "record/record.h"
#include "record/session.h"
#include "util/log.h"

#include <string.h>

/* Room for an annotation of k records on the innermost kept range; NULL when there is none to
 * attach to (no range open: misuse, said once; a range begun before the window: skipped). */
static tp_rec *annotation_room(tp_tls *t, uint32_t k, const char *fn) {
    tp_rec *r = tp_room(t, k);
    if (!r || t->owed) return r;
    if (t->depth == 0) tp_log_warn("%s outside any range (ignored)", fn);
    return NULL;
}

void tprof_flops(uint64_t flops) {
    if (!tp_api_enter("tprof_flops") || !tp_opts.flops) return;
    tp_tls *t = &tp_tls_cur;
    tp_rec *r = annotation_room(t, 1, "tprof_flops");
    if (!r) return;
    r->a = flops;
    r->b = tp_rec_word(TP_REC_FLOPS, 0);
    tp_publish(t, 1);
}

/* An annotation of copied strings: b = kind | the copy of key (the JSON text for shapes),
 * a = the copy of sval when given, else value. */
static void annotate(int kind, const char *key, const char *sval, uint64_t value, const char *fn) {
    tp_tls *t = &tp_tls_cur;
    tp_rec *r = annotation_room(t, 1, fn);
    if (!r) return;
    const char *k = tp_intern(t, key);
    if (sval && !(sval = tp_intern(t, sval))) return;
    if (!k) return;
    r->a = sval ? (uint64_t)(uintptr_t)sval : value;
    r->b = tp_rec_word(kind, (uintptr_t)k);
    tp_publish(t, 1);
}

void tprof_arg_int(const char *key, int64_t value) {
    if (tp_api_enter("tprof_arg_int"))
        annotate(TP_REC_ARG_INT, key, NULL, (uint64_t)value, "tprof_arg_int");
}

void tprof_arg_str(const char *key, const char *value) {
    if (tp_api_enter("tprof_arg_str"))
        annotate(TP_REC_ARG_STR, key, value ? value : "(null)", 0, "tprof_arg_str");
}

void tp_range_category(const char *category) {
    if (tp_api_enter("tp_range_category") && category)
        annotate(TP_REC_CATEGORY, category, NULL, 0, "tp_range_category");
}

void tp_range_arg_json(const char *key, const char *json) {
    if (!tp_api_enter("tp_range_arg_json") || !key || !json) return;
    tp_tls *t = &tp_tls_cur;
    tp_rec *r = annotation_room(t, 1, "tp_range_arg_json");
    const char *copy = r ? tp_intern(t, json) : NULL;
    if (!copy) return;
    r->a = (uint64_t)(uintptr_t)copy;
    r->b = tp_rec_word(TP_REC_ARG_JSON, (uintptr_t)key);
    tp_publish(t, 1);
}

/* External ids of ops, unique in the process (Kineto's are too); 0 means none. */
static uint64_t next_external_id;

int tp_op_begin(const char *name, int64_t seq, int64_t fwd_tid) {
    tprof_begin_copy_(name);
    tp_tls *t = &tp_tls_cur;
    int ext = TP_LOAD_RLX(&tp_opts.ext_corr);
    uint32_t k = 1 + (uint32_t)ext + (seq >= 0 ? 2 : 0);
    tp_rec *r = t->owed ? tp_room(t, k) : NULL;
    if (!r) return 0;
    r[0].a = 0;
    r[0].b = tp_rec_word(TP_REC_CATEGORY, (uintptr_t)tp_kcat_cpu_op);
    uint64_t id = 0;
    if (ext) {
        id = __atomic_add_fetch(&next_external_id, 1, __ATOMIC_RELAXED);
        r[1].a = id;
        r[1].b = tp_rec_word(TP_REC_ARG_INT, (uintptr_t)tp_karg_external_id);
    }
    if (seq >= 0) {
        r[1 + ext].a = (uint64_t)seq;
        r[1 + ext].b = tp_rec_word(TP_REC_ARG_INT, (uintptr_t)tp_karg_sequence_number);
        r[2 + ext].a = (uint64_t)fwd_tid;
        r[2 + ext].b = tp_rec_word(TP_REC_ARG_INT, (uintptr_t)tp_karg_fwd_thread_id);
    }
    tp_publish(t, k);
    if (!ext) return 1;
    tp_gpu_ext_push(id);
    return 1 | TP_OP_PUSHED;
}

void tp_op_pop(void) {
    tp_gpu_ext_pop();
}

void tp_range_complete(const char *name, uint64_t begin_ticks) {
    tp_tls *t = &tp_tls_cur;
    tp_rec *r = tp_room(t, 2);
    const char *copy = r ? tp_intern(t, name) : NULL;
    if (!copy) return;
    r[0].a = begin_ticks;
    r[0].b = tp_rec_word(TP_REC_BEGIN, (uintptr_t)copy);
    r[1].a = tp_clock_ticks();
    r[1].b = tp_rec_word(TP_REC_END, 0);
    tp_publish(t, 2);
}

void tprof_shapes(const char *dims_json) {
    if (tp_api_enter("tprof_shapes") && tp_opts.shapes)
        annotate(TP_REC_SHAPES, dims_json ? dims_json : "null", NULL, 0, "tprof_shapes");
}

/* Inputs too large for the record buffer: their texts and FLOPs now, as the converter makes
 * them from the bytes (window.c). */
static void inputs_now(const char *op, const void *bytes, size_t len, int flags) {
    tp_inputs_text text = {0};
    if (tp_inputs_format(bytes, len, &text) == 0) {
        if (flags & TP_INPUTS_SHAPES) {
            tprof_shapes(text.dims.data);
            tp_range_arg_json(tp_karg_input_type, text.types.data);
            tp_range_arg_json(tp_karg_concrete_inputs, text.concrete.data);
        }
        int64_t flops = (flags & TP_INPUTS_FLOPS) ? tp_inputs_flops(op, &text) : 0;
        if (flops > 0) tprof_flops((uint64_t)flops);
    }
    tp_inputs_text_free(&text);
}

void tp_op_inputs(const char *op, const void *bytes, size_t len, int flags) {
    if (!tp_api_enter("tp_op_inputs") || !len) return;
    if (!tp_opts.shapes) flags &= ~TP_INPUTS_SHAPES;
    if (!tp_opts.flops) flags &= ~TP_INPUTS_FLOPS;
    if (!flags) return;
    if (len > TP_INPUTS_MAX_BYTES) {
        inputs_now(op, bytes, len, flags);
        return;
    }
    tp_tls *t = &tp_tls_cur;
    uint32_t k = (uint32_t)((len + sizeof(tp_rec) - 1) / sizeof(tp_rec));
    tp_rec *r = annotation_room(t, 1 + k, "tp_op_inputs");
    if (!r) return;
    r[0].a = len;
    r[0].b = tp_rec_word(TP_REC_INPUTS, (uint64_t)flags);
    memcpy(&r[1], bytes, len);
    tp_publish(t, 1 + k);
}

void tprof_counter(const char *name, double value) {
    if (!tp_api_enter("tprof_counter")) return;
    tp_tls *t = &tp_tls_cur;
    tp_rec *r = tp_room(t, 2);
    const char *copy = r ? tp_intern(t, name) : NULL;
    if (!copy) return;
    r[0].a = tp_clock_ticks();
    r[0].b = tp_rec_word(TP_REC_COUNTER, (uintptr_t)copy);
    memcpy(&r[1].a, &value, sizeof(value));
    r[1].b = 0;
    tp_publish(t, 2);
}

/* reserved < 0: the allocator's reserved bytes are unknown (tprof_alloc's callers). */
static void write_memory(int device, uint64_t addr, const tp_mem_change *ch, int64_t reserved) {
    tp_tls *t = &tp_tls_cur;
    tp_rec *r = tp_room(t, 3);
    if (!r) return;
    uint64_t payload = (uint64_t)((int64_t)device + 1) | (reserved >= 0 ? TP_REC_RESERVED : 0);
    r[0].a = tp_clock_ticks();
    r[0].b = tp_rec_word(TP_REC_MEMORY, payload);
    r[1].a = addr;
    r[1].b = (uint64_t)ch->bytes;
    r[2].a = (uint64_t)ch->total;
    r[2].b = reserved >= 0 ? (uint64_t)reserved : 0;
    tp_publish(t, 3);
}

/* Tracked whether or not a window records, so that totals are right when one opens. */
static void memory_event(int device, const void *ptr, size_t bytes, int is_free) {
    tp_mem_change ch;
    if (tp_mem_update(device, (uint64_t)(uintptr_t)ptr, (int64_t)bytes, is_free, &ch)) return;
    write_memory(device, (uint64_t)(uintptr_t)ptr, &ch, -1);
}

void tp_mem_record_snapshot(void) {
    int devices[8];
    int64_t totals[8];
    if (!tp_opts.memory) return;
    size_t n = tp_mem_totals(devices, totals, sizeof(devices) / sizeof(devices[0]));
    for (size_t i = 0; i < n; i++)
        write_memory(devices[i], 0, &(tp_mem_change){0, totals[i]}, -1);
}

/* The allocator keeps its own totals: tprof's tracker (tp_mem_update) is not consulted, so
 * memory allocated before the session counts as the allocator says. */
void tp_memory_reported(int device, const void *ptr, int64_t bytes, int64_t total_allocated,
                        int64_t total_reserved) {
    if (!tp_api_enter("tp_memory_reported") || !tp_opts.memory) return;
    if (!ptr || device < -1 || device > 63) return;
    tp_mem_change ch = {bytes, total_allocated};
    write_memory(device, (uint64_t)(uintptr_t)ptr, &ch, total_reserved < 0 ? 0 : total_reserved);
}

void tprof_alloc(int device, const void *ptr, size_t bytes) {
    if (tp_api_enter("tprof_alloc") && tp_opts.memory) memory_event(device, ptr, bytes, 0);
}

void tprof_free(int device, const void *ptr) {
    if (tp_api_enter("tprof_free") && tp_opts.memory) memory_event(device, ptr, 0, 1);
}

/* Works in every state: a thread may name itself before tprof_init. */
void tprof_thread_name(const char *name) {
    tp_tls *t = &tp_tls_cur;
    if (!t->thr && !(t->thr = tp_thread_register())) return;
    const char *copy = tp_intern(t, name);
    if (copy) TP_STORE_REL(&t->thr->name, copy);
}
