/* read.c - the inputs as the command reads them: its read options (--stage, --rank,
 * --max-memory, ...) and the library's reading of trace files and run directories
 * (src/run/inputs.c) with the error printed as the command prints errors. */
#include "cli/cli.h"

#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

void tp_cli_read_opts_init(tp_inputs_opts *r) {
    tp_inputs_opts_init(r);
    r->max_memory = tp_cli_default_memory();
}

void tp_cli_read_opts_free(tp_inputs_opts *r) {
    for (size_t i = 0; i < r->nstages; i++) {
        free((void *)r->stages[i].patterns);
        free(r->specs[i]);
    }
    free(r->stages);
    free(r->specs);
    tp_cli_read_opts_init(r);
}

int tp_cli_add_stage(tp_inputs_opts *r, const char *verb, const char *spec) {
    char *copy = strdup(spec);
    if (!copy || TP_GROW(r->stages, r->cap_stages, r->nstages + 1) ||
        TP_GROW(r->specs, r->cap_specs, r->nstages + 1)) {
        free(copy);
        tp_cli_error("out of memory");
        return -1;
    }
    if (tp_stage_parse(copy, &r->stages[r->nstages])) {
        free(copy);
        tp_cli_usage(verb, "invalid stage \"%s\": write NAME or NAME=PATTERN|PATTERN", spec);
        return -1;
    }
    r->specs[r->nstages++] = copy;
    return 0;
}

tp_analysis *tp_cli_analyse(char *const *inputs, size_t n, const tp_inputs_opts *r) {
    char err[1024];
    tp_analysis *a = tp_inputs_analyse(inputs, n, r, err, sizeof(err));
    if (!a) tp_cli_error("%s", err);
    return a;
}
