/* fake_log.h - how the stand-in CUDA libraries report a call: one line appended to the file
 * named by an environment variable (nothing when it is unset). */
#ifndef FAKE_LOG_H
#define FAKE_LOG_H

#include <stdio.h>
#include <stdlib.h>

static inline void fake_log(const char *env, const char *what, const char *detail) {
    const char *path = getenv(env);
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%s%s%s\n", what, detail ? " " : "", detail ? detail : "");
    fclose(f);
}

#endif
