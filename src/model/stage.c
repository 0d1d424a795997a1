/* stage.c - the default stages and the parser of a stage written as text.
 *
 * The default patterns are docs/SEMANTICS.md §3's, extended so that a trace nobody instrumented
 * still gets its stages: tprof's own zone names; the ranges PyTorch writes by itself
 * (enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, Optimizer.step#SGD.step,
 * autograd::engine::evaluate_function: AddmmBackward0, nn.Module: Linear_0 with stacks); and
 * Lightning's action names ([pl][profile][Strategy]SingleDeviceStrategy.training_step,
 * [_TrainingEpochLoop].train_dataloader_next, [_EvaluationLoop].val_next). Each pattern was
 * checked against traces of torch 2.13 and Lightning 2.6 (tests/fixtures/advice). */
#include "model/stage.h"

#include <stdlib.h>
#include <string.h>

static const char *const dataloader_patterns[] = {"dataloader", "*DataLoader*", "*DataPipe*",
                                                  "*data_load*", "*dataloader_next*"};
static const char *const forward_patterns[] = {"forward", "## forward ##", "*.training_step",
                                               "nn.Module: *"};
static const char *const backward_patterns[] = {"backward", "## backward ##", "*.backward",
                                                "autograd::engine::evaluate_function: *"};
static const char *const optimizer_patterns[] = {"optimizer", "Optimizer.step#*",
                                                 "Optimizer.zero_grad#*", "*optimizer_step"};
/* Lightning's evaluation loop (validation and test): its steps, its batch fetches. */
static const char *const validation_patterns[] = {"validation", "*.validation_step",
                                                  "*[_EvaluationLoop]*"};

#define TP_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const tp_stage_def default_stages[] = {
    {"dataloader", dataloader_patterns, TP_COUNT(dataloader_patterns)},
    {"forward", forward_patterns, TP_COUNT(forward_patterns)},
    {"backward", backward_patterns, TP_COUNT(backward_patterns)},
    {"optimizer", optimizer_patterns, TP_COUNT(optimizer_patterns)},
    {"validation", validation_patterns, TP_COUNT(validation_patterns)},
};

const tp_stage_def *tp_default_stages(size_t *n) {
    *n = TP_COUNT(default_stages);
    return default_stages;
}

int tp_stage_parse(char *spec, tp_stage_def *out) {
    char *eq = strchr(spec, '=');
    size_t n = 1;
    for (char *p = eq; p && *p; p++)
        n += *p == '|';
    const char **pats = calloc(n, sizeof(*pats));
    if (!pats) return -1;
    *out = (tp_stage_def){.name = spec, .patterns = pats, .npatterns = n};
    if (!eq) {
        pats[0] = spec;
    } else {
        *eq = '\0'; /* the name ends here; patterns follow, split at '|' */
        char *p = eq + 1;
        for (size_t i = 0; i < n; i++) {
            pats[i] = p;
            char *bar = strchr(p, '|');
            if (bar) *bar = '\0', p = bar + 1;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!*spec || !*pats[i]) {
            free(pats);
            out->patterns = NULL;
            return -1;
        }
    return 0;
}
