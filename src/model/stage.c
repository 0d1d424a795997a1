/* stage.c - the default stages and the parser of a stage written as text.
 *
 * The default patterns are SEMANTICS.md §3's: they recognise tprof's own zone names, PyTorch's
 * record_function names (enumerate(DataLoader)#..., Optimizer.step#SGD.step) and Lightning's. */
#include "model/stage.h"

#include <stdlib.h>
#include <string.h>

static const char *const dataloader_patterns[] = {"dataloader", "*DataLoader*", "*DataPipe*",
                                                  "*dataloader_next*"};
static const char *const forward_patterns[] = {"forward", "## forward ##", "*.training_step"};
static const char *const backward_patterns[] = {"backward", "## backward ##", "*.backward"};
static const char *const optimizer_patterns[] = {"optimizer", "Optimizer.step#*",
                                                 "Optimizer.zero_grad#*", "*optimizer_step"};

#define TP_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const tp_stage_def default_stages[] = {
    {"dataloader", dataloader_patterns, TP_COUNT(dataloader_patterns)},
    {"forward", forward_patterns, TP_COUNT(forward_patterns)},
    {"backward", backward_patterns, TP_COUNT(backward_patterns)},
    {"optimizer", optimizer_patterns, TP_COUNT(optimizer_patterns)},
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
