/* env.c - the environment source: TPROF_<KEY>, the key in capitals (TPROF_WAIT=2).
 *
 * Only the keys' own names are read (no aliases): TPROF_ variables that are not keys are
 * ignored, and an empty variable counts as unset, as shells make them easily. */
#include "config/table.h"

#include <ctype.h>
#include <stdlib.h>

int tprof_config_load_env(tprof_config *cfg) {
    if (!cfg) return -1;
    cfg->err[0] = '\0'; /* the error of this call, "" when it succeeds (tprof.h) */
    for (size_t i = 0; i < TP_NKEYS; i++) {
        const tp_keydef *k = &tp_config_keys[i];
        char name[64] = "TPROF_";
        for (size_t j = 0; k->name[j] && j + 7 < sizeof(name); j++)
            name[6 + j] = (char)toupper((unsigned char)k->name[j]);
        const char *v = getenv(name);
        if (v && *v && tp_config_set_value(cfg, k, k->name, v, name)) return -1;
    }
    return 0;
}
