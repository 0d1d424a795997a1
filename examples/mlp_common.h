/* mlp_common.h - what the two MLP examples share (train_mlp.c on the CPU, train_mlp_cuda.cu on a
 * GPU): the network's sizes, the data (ten Gaussian clusters drawn by a deterministic generator,
 * loaded sample by sample as a data loader would) and the command line.
 *
 * Header-only and C/C++-compatible: each example is one translation unit, and the CUDA one is
 * compiled as C++ by nvcc. */
#ifndef MLP_COMMON_H
#define MLP_COMMON_H

#include <tprof.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { INPUT = 64, HIDDEN1 = 256, HIDDEN2 = 128, CLASSES = 10, MAX_BATCH = 1024 };

/* ---- deterministic random numbers (xorshift64*) ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static inline uint64_t rng_next(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

static inline float rng_uniform(void) {
    return (float)((rng_next() >> 40) + 1) / (float)(1ULL << 24);
}

static inline float rng_normal(void) {
    float u1 = rng_uniform(), u2 = rng_uniform();
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

/* ---- the data: ten clusters in 64 dimensions ---- */

static float centers[CLASSES][INPUT];

/* Seeds the generator (never to 0, where xorshift stays) and draws the cluster centres. */
static inline void make_data(unsigned long seed) {
    rng_state = ((uint64_t)seed + 1) * 0x9e3779b97f4a7c15ULL | 1;
    for (int c = 0; c < CLASSES; c++)
        for (int i = 0; i < INPUT; i++)
            centers[c][i] = rng_normal() * 1.5f;
}

/* One sample as a data loader would produce it: draw, perturb, normalise. Returns its label. */
static inline int load_sample(float *x) {
    TPROF_ZONE("load_sample");
    int label = (int)(rng_next() % CLASSES);
    float norm = 0.0f;
    for (int i = 0; i < INPUT; i++) {
        x[i] = centers[label][i] + rng_normal() * 3.5f;
        norm += x[i] * x[i];
    }
    float inv = 1.0f / sqrtf(norm / INPUT + 1e-6f);
    for (int i = 0; i < INPUT; i++)
        x[i] *= inv;
    return label;
}

/* ---- command line ---- */

typedef struct mlp_options {
    long steps; /* per epoch */
    long epochs, batch, log_every;
    float lr;
    unsigned long seed;
} mlp_options;

static inline mlp_options mlp_default_options(void) {
    mlp_options o;
    o.steps = 100;
    o.epochs = 1;
    o.batch = 64;
    o.log_every = 20;
    o.lr = 0.05f;
    o.seed = 1;
    return o;
}

static inline int mlp_parse_long(const char *prog, const char *flag, const char *text, long min,
                                 long max, long *out) {
    char *end;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || errno || *end || end == text || v < min || v > max) {
        fprintf(stderr, "%s: %s needs an integer in [%ld, %ld], got \"%s\"\n", prog, flag, min, max,
                text ? text : "");
        return -1;
    }
    *out = v;
    return 0;
}

static inline int mlp_parse_rate(const char *prog, const char *flag, const char *text, float *out) {
    char *end;
    float v = text ? strtof(text, &end) : 0.0f;
    if (!text || *end || end == text || !(v > 0.0f && v < 10.0f)) {
        fprintf(stderr, "%s: %s needs a number in (0, 10), got \"%s\"\n", prog, flag,
                text ? text : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* The options left in argv once tprof_init took its own; every option takes one value.
 * `extra` (may be NULL) is offered the options this parser does not know: it returns 1 when it
 * took (option, value), 0 when it does not know it either. "--help" prints usage and exits. */
static inline int mlp_parse_args(int argc, char **argv, const char *prog, const char *usage,
                                 mlp_options *o, int (*extra)(const char *, const char *)) {
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long seed = 0;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            exit(0);
        } else if (!strcmp(a, "--steps")) {
            rc = mlp_parse_long(prog, a, v, 1, 1L << 40, &o->steps);
        } else if (!strcmp(a, "--epochs")) {
            rc = mlp_parse_long(prog, a, v, 1, 1L << 20, &o->epochs);
        } else if (!strcmp(a, "--batch")) {
            rc = mlp_parse_long(prog, a, v, 1, MAX_BATCH, &o->batch);
        } else if (!strcmp(a, "--log-every")) {
            rc = mlp_parse_long(prog, a, v, 1, 1L << 40, &o->log_every);
        } else if (!strcmp(a, "--seed")) {
            rc = mlp_parse_long(prog, a, v, 0, 1L << 40, &seed);
            o->seed = (unsigned long)seed;
        } else if (!strcmp(a, "--lr")) {
            rc = mlp_parse_rate(prog, a, v, &o->lr);
        } else if (!(extra && v && extra(a, v))) {
            fprintf(stderr, "%s: unknown option \"%s\"\n%s", prog, a, usage);
            return -1;
        }
        if (rc) return -1;
    }
    return 0;
}

#endif
