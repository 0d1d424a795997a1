/* analysis.c - the life of a tp_analysis: creation with its stage definitions, warnings,
 * freeing. Adding a model is add_model.c; deriving the figures, finish.c. */
#include "analysis/internal.h"
#include "analysis/modules.h"
#include "analysis/ranks.h"

#include "util/vec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copy_stages(tp_analysis *a, const tp_stage_def *defs, size_t n) {
    struct tp_analysis_priv *pv = a->priv;
    a->stages = calloc(n ? n : 1, sizeof(*a->stages));
    pv->patterns = calloc(n ? n : 1, sizeof(*pv->patterns));
    pv->npatterns = calloc(n ? n : 1, sizeof(*pv->npatterns));
    if (!a->stages || !pv->patterns || !pv->npatterns) return -1;
    a->nstages = n;
    for (size_t st = 0; st < n; st++) {
        a->stages[st].name = strdup(defs[st].name ? defs[st].name : "");
        pv->patterns[st] = calloc(defs[st].npatterns ? defs[st].npatterns : 1, sizeof(char *));
        if (!a->stages[st].name || !pv->patterns[st]) return -1;
        for (size_t i = 0; i < defs[st].npatterns; i++) {
            if (!(pv->patterns[st][i] = strdup(defs[st].patterns[i]))) return -1;
            pv->npatterns[st]++;
        }
    }
    return 0;
}

tp_analysis *tp_analysis_new(const tp_analysis_opts *opts) {
    tp_analysis *a = calloc(1, sizeof(*a));
    if (!a) return NULL;
    a->priv = calloc(1, sizeof(*a->priv));
    a->gpu_utilization_pct = -1;
    a->dataloader_pct = -1;
    a->setup = (tp_setup){.cpu_count = -1,
                          .num_workers = -1,
                          .pin_memory = -1,
                          .persistent_workers = -1,
                          .batch_size = -1,
                          .prefetch_factor = -1,
                          .foreach = -1,
                          .fused = -1};
    a->other.pct = -1;
    a->mfu_pct = -1;
    a->achieved_flops_per_s = -1;
    a->fcm_mfu_pct = -1;
    a->achieved_fcm_flops_per_s = -1;
    a->opt_peak_tflops = opts && opts->peak_tflops > 0 ? opts->peak_tflops : 0;
    if (a->priv) a->priv->per_rank = opts ? opts->per_rank : TP_PER_RANK_OFF;
    if (a->priv) a->priv->one_thread = opts && opts->threads == 1;
    size_t n;
    const tp_stage_def *defs = tp_default_stages(&n);
    if (opts && opts->stages) {
        defs = opts->stages;
        n = opts->nstages;
    }
    a->other.name = strdup("other");
    if (!a->priv || !a->other.name || copy_stages(a, defs, n)) {
        tp_analysis_free(a);
        return NULL;
    }
    return a;
}

void tp_analysis_add_warning(tp_analysis *a, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    char *copy = strdup(line);
    if (!copy || TP_GROW(a->warnings, a->cap_warnings, a->nwarnings + 1)) {
        free(copy);
        a->failed = 1;
        return;
    }
    a->warnings[a->nwarnings++] = copy;
}

void tp_analysis_free(tp_analysis *a) {
    if (!a) return;
    struct tp_analysis_priv *pv = a->priv;
    free(a->input_path);
    tp_free_strings(a->paths, a->npaths);
    for (size_t i = 0; i < a->nsteps; i++) {
        free(a->steps[i].name);
        free(a->steps[i].stage_ns);
    }
    free(a->steps);
    free(a->steps_by_dur);
    tp_flight_rows_free(a);
    tp_modules_free(a->modules);
    for (size_t i = 0; i < a->nops; i++) {
        free(a->ops[i].name);
        free(a->ops[i].module);
    }
    free(a->ops);
    free(a->ops_by_gpu);
    free(a->ops_by_alloc);
    tp_shapes_rows_free(a);
    for (size_t i = 0; i < a->nkernels; i++)
        free(a->kernels[i].name);
    free(a->kernels);
    for (size_t st = 0; st < a->nstages; st++) {
        free(a->stages[st].name);
        free(a->stages[st].durs);
        if (pv && pv->patterns && pv->npatterns)
            tp_free_strings(pv->patterns[st], pv->npatterns[st]);
    }
    free(a->stages);
    free(a->other.name);
    free(a->gpu_name);
    tp_stacks_free(a->stacks);
    free(a->idle);
    free(a->other.durs);
    free(a->memory);
    tp_free_strings(a->warnings, a->nwarnings);
    for (size_t i = 0; i < a->nrecos; i++) {
        free(a->recos[i].id);
        free(a->recos[i].message);
    }
    free(a->recos);
    tp_ranks_free(a->ranks);
    tp_ranks_free(a->rank_summary);
    if (pv) {
        tp_ranks_acc_free(pv->ranks);
        tp_idle_carry_free(pv->carry);
        free(pv->gpu_pieces.overhang);
        free(pv->gpu_pieces.devices);
        free(pv->patterns);
        free(pv->npatterns);
        tp_name_index_free(&pv->ops_ix);
        tp_name_index_free(&pv->kernels_ix);
        free(pv);
    }
    free(a);
}
