/* train_mlp.c - tprof's main demo: a real, small training loop in C, profiled.
 *
 * An MLP classifier (64 -> 256 -> 128 -> 10, ReLU, softmax cross-entropy) learns to tell apart ten
 * Gaussian clusters. Each step loads a batch sample by sample (the dataloader stage), runs the
 * forward pass, back-propagates real gradients and applies SGD, each stage a tprof range, each
 * layer a range carrying its FLOPs. The loss is printed so one can watch it learn.
 *
 *   build/examples/train_mlp --steps 200 --epochs 2 --profile --profiling.warmup=2
 *
 * Every tprof option works here (--profile, --profiling.<key> <value>, TPROF_<KEY>, a YAML file);
 * a bad one is reported in one line and the program exits with status 2. */
#include "mlp_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct layer {
    const char *name;      /* forward range name */
    const char *grad_name; /* backward range name */
    int in, out;
    float *w, *b; /* w: out x in, row-major */
    float *dw, *db;
} layer;

/* ---- the model ---- */

static float *alloc_floats(size_t n) {
    float *p = calloc(n, sizeof(float));
    if (!p) {
        fprintf(stderr, "train_mlp: out of memory\n");
        exit(1);
    }
    TPROF_ALLOC(-1, p, n * sizeof(float));
    return p;
}

static void release_floats(float *p) {
    TPROF_FREE(-1, p);
    free(p);
}

static void layer_init(layer *l, const char *name, const char *grad_name, int in, int out) {
    l->name = name;
    l->grad_name = grad_name;
    l->in = in;
    l->out = out;
    l->w = alloc_floats((size_t)in * out);
    l->b = alloc_floats((size_t)out);
    l->dw = alloc_floats((size_t)in * out);
    l->db = alloc_floats((size_t)out);
    float scale = sqrtf(2.0f / (float)in); /* He initialisation for ReLU layers */
    for (int i = 0; i < in * out; i++)
        l->w[i] = rng_normal() * scale;
}

static void layer_free(layer *l) {
    release_floats(l->w);
    release_floats(l->b);
    release_floats(l->dw);
    release_floats(l->db);
}

/* y[n x out] = x[n x in] W^T + b */
static void linear_forward(const layer *l, const float *x, float *y, int n) {
    TPROF_ZONE(l->name);
    TPROF_FLOPS(2ULL * (uint64_t)n * (uint64_t)l->in * (uint64_t)l->out);
    for (int s = 0; s < n; s++) {
        const float *xs = x + (size_t)s * l->in;
        float *ys = y + (size_t)s * l->out;
        for (int o = 0; o < l->out; o++) {
            const float *w = l->w + (size_t)o * l->in;
            float acc = l->b[o];
            for (int i = 0; i < l->in; i++)
                acc += w[i] * xs[i];
            ys[o] = acc;
        }
    }
}

/* Given dy, accumulates dW = dy^T x and db = sum dy, and writes dx = dy W (when dx != NULL). */
static void linear_backward(layer *l, const float *x, const float *dy, float *dx, int n) {
    TPROF_ZONE(l->grad_name);
    TPROF_FLOPS((dx ? 4ULL : 2ULL) * (uint64_t)n * (uint64_t)l->in * (uint64_t)l->out);
    memset(l->dw, 0, sizeof(float) * (size_t)l->in * l->out);
    memset(l->db, 0, sizeof(float) * (size_t)l->out);
    if (dx) memset(dx, 0, sizeof(float) * (size_t)n * l->in);
    for (int s = 0; s < n; s++) {
        const float *xs = x + (size_t)s * l->in;
        const float *dys = dy + (size_t)s * l->out;
        float *dxs = dx ? dx + (size_t)s * l->in : NULL;
        for (int o = 0; o < l->out; o++) {
            float g = dys[o];
            float *dw = l->dw + (size_t)o * l->in;
            const float *w = l->w + (size_t)o * l->in;
            l->db[o] += g;
            for (int i = 0; i < l->in; i++)
                dw[i] += g * xs[i];
            if (dxs)
                for (int i = 0; i < l->in; i++)
                    dxs[i] += g * w[i];
        }
    }
}

static void relu_forward(const char *name, float *y, size_t count) {
    TPROF_ZONE(name);
    for (size_t i = 0; i < count; i++)
        y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

/* dy *= (y > 0), where y is the ReLU's output. */
static void relu_backward(const char *name, const float *y, float *dy, size_t count) {
    TPROF_ZONE(name);
    for (size_t i = 0; i < count; i++)
        if (y[i] <= 0.0f) dy[i] = 0.0f;
}

/* Mean cross-entropy of softmax(logits); writes d(loss)/d(logits) into dlogits. */
static float softmax_cross_entropy(const float *logits, const int *labels, float *dlogits, int n,
                                   int *correct) {
    TPROF_ZONE("cross_entropy");
    float loss = 0.0f;
    *correct = 0;
    for (int s = 0; s < n; s++) {
        const float *z = logits + (size_t)s * CLASSES;
        float *dz = dlogits + (size_t)s * CLASSES;
        float zmax = z[0];
        int argmax = 0;
        for (int c = 1; c < CLASSES; c++)
            if (z[c] > zmax) zmax = z[c], argmax = c;
        float sum = 0.0f;
        for (int c = 0; c < CLASSES; c++)
            sum += dz[c] = expf(z[c] - zmax);
        for (int c = 0; c < CLASSES; c++)
            dz[c] = dz[c] / sum / (float)n;
        dz[labels[s]] -= 1.0f / (float)n;
        loss += logf(sum) - (z[labels[s]] - zmax);
        *correct += argmax == labels[s];
    }
    return loss / (float)n;
}

static void sgd(layer *layers, int nlayers, float lr) {
    for (int k = 0; k < nlayers; k++) {
        layer *l = &layers[k];
        for (int i = 0; i < l->in * l->out; i++)
            l->w[i] -= lr * l->dw[i];
        for (int o = 0; o < l->out; o++)
            l->b[o] -= lr * l->db[o];
    }
}

static const char usage[] =
    "usage: train_mlp [--steps N] [--epochs E] [--batch B] [--lr X] [--log-every N] [--seed S]\n"
    "                 [tprof options: --profile, --profiling.<key> <value>]\n"
    "Trains a small MLP on generated data; --steps counts steps per epoch.\n"
    "tprof's options are listed in docs/CONFIG.md.\n";

int main(int argc, char **argv) {
    /* tprof takes its own arguments out of argv first; the rest are ours. */
    if (TPROF_INIT(&argc, argv) != 0) return 2;
    mlp_options o = mlp_default_options();
    if (mlp_parse_args(argc, argv, "train_mlp", usage, &o, NULL) != 0) {
        TPROF_SHUTDOWN();
        return 2;
    }
    make_data(o.seed);
    TPROF_THREAD_NAME("trainer");

    layer layers[3];
    layer_init(&layers[0], "linear1", "linear1.backward", INPUT, HIDDEN1);
    layer_init(&layers[1], "linear2", "linear2.backward", HIDDEN1, HIDDEN2);
    layer_init(&layers[2], "linear3", "linear3.backward", HIDDEN2, CLASSES);
    int n = (int)o.batch;
    float *h1 = alloc_floats((size_t)n * HIDDEN1);
    float *h2 = alloc_floats((size_t)n * HIDDEN2), *logits = alloc_floats((size_t)n * CLASSES);
    float *d_logits = alloc_floats((size_t)n * CLASSES), *d_h2 = alloc_floats((size_t)n * HIDDEN2);
    float *d_h1 = alloc_floats((size_t)n * HIDDEN1);
    int labels[MAX_BATCH];

    for (long epoch = 0; epoch < o.epochs; epoch++) {
        TPROF_EPOCH((int)epoch);
        for (long step = 0; step < o.steps; step++) {
            float *x; /* a fresh batch each step, as a data loader hands out */
            {
                TPROF_ZONE("dataloader");
                x = alloc_floats((size_t)n * INPUT);
                for (int s = 0; s < n; s++)
                    labels[s] = load_sample(x + (size_t)s * INPUT);
            }
            float loss;
            int correct;
            {
                TPROF_ZONE("forward");
                linear_forward(&layers[0], x, h1, n);
                relu_forward("relu1", h1, (size_t)n * HIDDEN1);
                linear_forward(&layers[1], h1, h2, n);
                relu_forward("relu2", h2, (size_t)n * HIDDEN2);
                linear_forward(&layers[2], h2, logits, n);
                loss = softmax_cross_entropy(logits, labels, d_logits, n, &correct);
            }
            {
                TPROF_ZONE("backward");
                linear_backward(&layers[2], h2, d_logits, d_h2, n);
                relu_backward("relu2.backward", h2, d_h2, (size_t)n * HIDDEN2);
                linear_backward(&layers[1], h1, d_h2, d_h1, n);
                relu_backward("relu1.backward", h1, d_h1, (size_t)n * HIDDEN1);
                linear_backward(&layers[0], x, d_h1, NULL, n);
            }
            {
                TPROF_ZONE("optimizer");
                sgd(layers, 3, o.lr);
            }
            release_floats(x);
            TPROF_COUNTER("loss", loss);
            if (step % o.log_every == 0 || step == o.steps - 1)
                printf("epoch %ld step %4ld  loss %.4f  accuracy %5.1f%%\n", epoch, step, loss,
                       100.0 * correct / n);
            TPROF_STEP();
        }
    }
    fflush(stdout);

    for (int k = 0; k < 3; k++)
        layer_free(&layers[k]);
    release_floats(h1);
    release_floats(h2);
    release_floats(logits);
    release_floats(d_logits);
    release_floats(d_h2);
    release_floats(d_h1);
    TPROF_SHUTDOWN();
    return 0;
}
