/* train_mlp_cuda.cu - the main demo's MLP (examples/train_mlp.c) trained on a GPU, profiled.
 *
 * The same classifier (64 -> 256 -> 128 -> 10, ReLU, softmax cross-entropy, SGD) on the same ten
 * Gaussian clusters, with the same stages and layer ranges: the dataloader stage draws the batch
 * on the host and copies it to the GPU; forward, backward and the optimizer launch this file's own
 * kernels (one kernel per launch, 25 per step, so kernel counts are exact for bench/gpu/check.sh).
 * Kernels run asynchronously: a layer's range covers its launches, and the kernels it launched
 * are linked to it by correlation in the trace.
 *
 *   build/examples/train_mlp_cuda --steps 200 --epochs 2 --profile --profiling.warmup=2
 *
 * Options as train_mlp's (--steps per epoch, --epochs, --batch, --lr, --log-every, --seed, every
 * tprof option), plus --cuda-events FILE: time every kernel with CUDA events on the same stream
 * and write one JSON line per step, {"step": k, "kernels": n, "kernel_us": t}, k numbered as tprof
 * numbers steps; --cuda-graph on: capture forward, backward and the optimizer (a memset and the
 * 25 kernels) into a CUDA graph once, then replay it each step inside a "graph" range, so each
 * step makes one cudaGraphLaunch (not with --cuda-events). At the end it prints
 * "train_ms=... steps=... step_ms=...". */
#include "mlp_common.h"

#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "train_mlp_cuda: %s failed: %s\n", #call, cudaGetErrorString(err_));   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

enum { TILE = 16, THREADS = 256, MAX_KERNELS_PER_STEP = 64 };

/* ---- kernels -------------------------------------------------------------------------------- */

/* C[m x n] = op(A) op(B) with op(A) m x k and op(B) k x n, row-major; TA/TB read A/B transposed. */
template <bool TA, bool TB>
__global__ void gemm(const float *A, const float *B, float *C, int m, int n, int k) {
    __shared__ float as[TILE][TILE], bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < k; t += TILE) {
        int ak = t + threadIdx.x, bk = t + threadIdx.y;
        as[threadIdx.y][threadIdx.x] =
            row < m && ak < k ? (TA ? A[(size_t)ak * m + row] : A[(size_t)row * k + ak]) : 0.f;
        bs[threadIdx.y][threadIdx.x] =
            bk < k && col < n ? (TB ? B[(size_t)col * k + bk] : B[(size_t)bk * n + col]) : 0.f;
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) C[(size_t)row * n + col] = acc;
}

__global__ void add_bias(float *y, const float *b, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) y[i] += b[i % cols];
}

__global__ void relu(float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] < 0.f) y[i] = 0.f;
}

/* dy *= (y > 0), where y is the ReLU's output. */
__global__ void relu_backward(const float *y, float *dy, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] <= 0.f) dy[i] = 0.f;
}

/* Per row: softmax; the mean cross-entropy and the number right into stats[0] and stats[1];
 * d(loss)/d(logits) into grad. */
__global__ void softmax_cross_entropy(const float *logits, const int *labels, float *grad,
                                      float *stats, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float *z = logits + (size_t)r * CLASSES;
    float zmax = z[0], sum = 0.f;
    int argmax = 0;
    for (int c = 1; c < CLASSES; c++)
        if (z[c] > zmax) zmax = z[c], argmax = c;
    for (int c = 0; c < CLASSES; c++)
        sum += expf(z[c] - zmax);
    for (int c = 0; c < CLASSES; c++)
        grad[(size_t)r * CLASSES + c] = (expf(z[c] - zmax) / sum - (c == labels[r])) / rows;
    atomicAdd(&stats[0], (logf(sum) - (z[labels[r]] - zmax)) / rows);
    if (argmax == labels[r]) atomicAdd(&stats[1], 1.f);
}

/* Column sums of g (rows x cols): a bias gradient. */
__global__ void column_sum(const float *g, float *out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.f;
    for (int r = 0; r < rows; r++)
        s += g[(size_t)r * cols + c];
    out[c] = s;
}

__global__ void sgd_update(float *w, const float *g, float lr, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) w[i] -= lr * g[i];
}

/* ---- launches, optionally timed with CUDA events ------------------------------------------- */

typedef struct timing {
    FILE *out; /* NULL: no event timing */
    cudaEvent_t start[MAX_KERNELS_PER_STEP], stop[MAX_KERNELS_PER_STEP];
    int n; /* kernels launched this step */
} timing;

static timing T;
static cudaStream_t stream; /* every copy, set and launch: 0, or the captured stream */

template <typename... P, typename... A>
static void launch(void (*kernel)(P...), dim3 grid, dim3 block, A... args) {
    int timed = T.out && T.n < MAX_KERNELS_PER_STEP;
    if (timed) CHECK(cudaEventRecord(T.start[T.n]));
    kernel<<<grid, block, 0, stream>>>(args...);
    CHECK(cudaGetLastError());
    if (timed) CHECK(cudaEventRecord(T.stop[T.n]));
    T.n++;
}

static void timing_step_end(long step) {
    if (!T.out) return;
    int n = T.n < MAX_KERNELS_PER_STEP ? T.n : MAX_KERNELS_PER_STEP;
    CHECK(cudaEventSynchronize(T.stop[n - 1]));
    double us = 0;
    for (int i = 0; i < n; i++) {
        float ms;
        CHECK(cudaEventElapsedTime(&ms, T.start[i], T.stop[i]));
        us += ms * 1000.0;
    }
    fprintf(T.out, "{\"step\": %ld, \"kernels\": %d, \"kernel_us\": %.3f}\n", step, T.n, us);
    T.n = 0;
}

static dim3 grid_1d(int n) {
    return dim3((unsigned)((n + THREADS - 1) / THREADS));
}

static dim3 grid_2d(int m, int n) {
    return dim3((unsigned)((n + TILE - 1) / TILE), (unsigned)((m + TILE - 1) / TILE));
}

/* ---- the model on the GPU ------------------------------------------------------------------- */

typedef struct layer {
    const char *name, *grad_name;
    int in, out;
    float *w, *b, *dw, *db; /* device; w: out x in, row-major */
} layer;

static float *device_floats(size_t n) {
    float *p;
    CHECK(cudaMalloc(&p, n * sizeof(float)));
    CHECK(cudaMemset(p, 0, n * sizeof(float)));
    return p;
}

static void layer_init(layer *l, const char *name, const char *grad_name, int in, int out) {
    l->name = name;
    l->grad_name = grad_name;
    l->in = in;
    l->out = out;
    l->w = device_floats((size_t)in * out);
    l->b = device_floats(out);
    l->dw = device_floats((size_t)in * out);
    l->db = device_floats(out);
    float *w = (float *)malloc((size_t)in * out * sizeof(float));
    float scale = sqrtf(2.0f / (float)in); /* He initialisation for ReLU layers */
    for (int i = 0; i < in * out; i++)
        w[i] = rng_normal() * scale;
    CHECK(cudaMemcpy(l->w, w, (size_t)in * out * sizeof(float), cudaMemcpyHostToDevice));
    free(w);
}

static void layer_free(layer *l) {
    CHECK(cudaFree(l->w));
    CHECK(cudaFree(l->b));
    CHECK(cudaFree(l->dw));
    CHECK(cudaFree(l->db));
}

/* y[n x out] = x[n x in] W^T + b */
static void linear_forward(const layer *l, const float *x, float *y, int n) {
    TPROF_ZONE(l->name);
    TPROF_FLOPS(2ULL * (uint64_t)n * (uint64_t)l->in * (uint64_t)l->out);
    launch(gemm<false, true>, grid_2d(n, l->out), dim3(TILE, TILE), x, (const float *)l->w, y, n,
           l->out, l->in);
    launch(add_bias, grid_1d(n * l->out), dim3(THREADS), y, (const float *)l->b, n, l->out);
}

/* dW = dy^T x, db = column sums of dy, dx = dy W (when dx != NULL). */
static void linear_backward(layer *l, const float *x, const float *dy, float *dx, int n) {
    TPROF_ZONE(l->grad_name);
    TPROF_FLOPS((dx ? 4ULL : 2ULL) * (uint64_t)n * (uint64_t)l->in * (uint64_t)l->out);
    launch(gemm<true, false>, grid_2d(l->out, l->in), dim3(TILE, TILE), dy, x, l->dw, l->out, l->in,
           n);
    launch(column_sum, grid_1d(l->out), dim3(THREADS), dy, l->db, n, l->out);
    if (dx)
        launch(gemm<false, false>, grid_2d(n, l->in), dim3(TILE, TILE), dy, (const float *)l->w, dx,
               n, l->in, l->out);
}

static void relu_range(const char *name, float *y, int count) {
    TPROF_ZONE(name);
    launch(relu, grid_1d(count), dim3(THREADS), y, count);
}

static void relu_backward_range(const char *name, const float *y, float *dy, int count) {
    TPROF_ZONE(name);
    launch(relu_backward, grid_1d(count), dim3(THREADS), y, dy, count);
}

static void sgd(layer *layers, int nlayers, float lr) {
    for (int k = 0; k < nlayers; k++) {
        layer *l = &layers[k];
        launch(sgd_update, grid_1d(l->in * l->out), dim3(THREADS), l->w, (const float *)l->dw, lr,
               l->in * l->out);
        launch(sgd_update, grid_1d(l->out), dim3(THREADS), l->b, (const float *)l->db, lr, l->out);
    }
}

/* The device buffers of one batch. */
typedef struct buffers {
    float *x, *h1, *h2, *logits, *d_logits, *d_h2, *d_h1, *stats;
    int *labels;
} buffers;

/* Forward, loss, backward and the optimizer: 25 kernels and a memset on `stream`. */
static void compute(layer *layers, const buffers *b, int n, float lr) {
    {
        TPROF_ZONE("forward");
        linear_forward(&layers[0], b->x, b->h1, n);
        relu_range("relu1", b->h1, n * HIDDEN1);
        linear_forward(&layers[1], b->h1, b->h2, n);
        relu_range("relu2", b->h2, n * HIDDEN2);
        linear_forward(&layers[2], b->h2, b->logits, n);
        TPROF_ZONE("cross_entropy");
        CHECK(cudaMemsetAsync(b->stats, 0, 2 * sizeof(float), stream));
        launch(softmax_cross_entropy, grid_1d(n), dim3(THREADS), (const float *)b->logits,
               (const int *)b->labels, b->d_logits, b->stats, n);
    }
    {
        TPROF_ZONE("backward");
        linear_backward(&layers[2], b->h2, b->d_logits, b->d_h2, n);
        relu_backward_range("relu2.backward", b->h2, b->d_h2, n * HIDDEN2);
        linear_backward(&layers[1], b->h1, b->d_h2, b->d_h1, n);
        relu_backward_range("relu1.backward", b->h1, b->d_h1, n * HIDDEN1);
        linear_backward(&layers[0], b->x, b->d_h1, NULL, n);
    }
    {
        TPROF_ZONE("optimizer");
        sgd(layers, 3, lr);
    }
}

/* The graph of compute(), captured once on a stream of its own (the legacy default stream
 * cannot be captured); its ranges are recorded once, at the capture. */
static cudaGraphExec_t capture(layer *layers, const buffers *b, int n, float lr) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    compute(layers, b, n, lr);
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphDestroy(graph));
    return exec;
}

/* ---- command line: train_mlp's, plus --cuda-events and --cuda-graph ----------------------- */

static const char usage[] =
    "usage: train_mlp_cuda [--steps N] [--epochs E] [--batch B] [--lr X] [--log-every N]\n"
    "                      [--seed S] [--cuda-events FILE] [--cuda-graph on|off]\n"
    "                      [tprof options]\n"
    "Trains train_mlp's MLP on a GPU; --steps counts steps per epoch.\n";

static const char *events_path;
static int use_graph;

static int cuda_option(const char *name, const char *value) {
    if (strcmp(name, "--cuda-graph") == 0 && (!strcmp(value, "on") || !strcmp(value, "off"))) {
        use_graph = !strcmp(value, "on");
        return 1;
    }
    if (strcmp(name, "--cuda-events") != 0) return 0;
    events_path = value;
    return 1;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    /* tprof takes its own arguments out of argv first; the rest are ours. */
    if (TPROF_INIT(&argc, argv) != 0) return 2;
    mlp_options o = mlp_default_options();
    if (mlp_parse_args(argc, argv, "train_mlp_cuda", usage, &o, cuda_option) != 0) {
        TPROF_SHUTDOWN();
        return 2;
    }
    if (events_path && use_graph) {
        fprintf(stderr, "train_mlp_cuda: --cuda-events times launches, which a graph has not\n");
        TPROF_SHUTDOWN();
        return 2;
    }
    if (use_graph) CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (events_path) {
        if (!(T.out = fopen(events_path, "w"))) {
            perror(events_path);
            TPROF_SHUTDOWN();
            return 1;
        }
        for (int i = 0; i < MAX_KERNELS_PER_STEP; i++) {
            CHECK(cudaEventCreate(&T.start[i]));
            CHECK(cudaEventCreate(&T.stop[i]));
        }
    }
    make_data(o.seed);
    TPROF_THREAD_NAME("trainer");

    layer layers[3];
    layer_init(&layers[0], "linear1", "linear1.backward", INPUT, HIDDEN1);
    layer_init(&layers[1], "linear2", "linear2.backward", HIDDEN1, HIDDEN2);
    layer_init(&layers[2], "linear3", "linear3.backward", HIDDEN2, CLASSES);
    int n = (int)o.batch;
    buffers b;
    b.x = device_floats((size_t)n * INPUT), b.h1 = device_floats((size_t)n * HIDDEN1);
    b.h2 = device_floats((size_t)n * HIDDEN2), b.logits = device_floats((size_t)n * CLASSES);
    b.d_logits = device_floats((size_t)n * CLASSES), b.d_h2 = device_floats((size_t)n * HIDDEN2);
    b.d_h1 = device_floats((size_t)n * HIDDEN1), b.stats = device_floats(2);
    CHECK(cudaMalloc(&b.labels, n * sizeof(int)));
    float *host_x, host_stats[2] = {0, 0};
    int *host_labels;
    CHECK(cudaMallocHost(&host_x, (size_t)n * INPUT * sizeof(float)));
    CHECK(cudaMallocHost(&host_labels, n * sizeof(int)));
    CHECK(cudaDeviceSynchronize());
    cudaGraphExec_t graph = use_graph ? capture(layers, &b, n, o.lr) : NULL;

    double t0 = now_ms();
    long global_step = 0;
    for (long epoch = 0; epoch < o.epochs; epoch++) {
        TPROF_EPOCH((int)epoch);
        for (long step = 0; step < o.steps; step++, global_step++) {
            {
                TPROF_ZONE("dataloader");
                for (int s = 0; s < n; s++)
                    host_labels[s] = load_sample(host_x + (size_t)s * INPUT);
                CHECK(cudaMemcpyAsync(b.x, host_x, (size_t)n * INPUT * sizeof(float),
                                      cudaMemcpyHostToDevice, stream));
                CHECK(cudaMemcpyAsync(b.labels, host_labels, n * sizeof(int),
                                      cudaMemcpyHostToDevice, stream));
                /* the host buffers are refilled next step: wait until the copies read them */
                CHECK(cudaStreamSynchronize(stream));
            }
            if (graph) {
                TPROF_ZONE("graph");
                CHECK(cudaGraphLaunch(graph, stream));
            } else {
                compute(layers, &b, n, o.lr);
            }
            timing_step_end(global_step);
            if (step % o.log_every == 0 || step == o.steps - 1) {
                if (stream) CHECK(cudaStreamSynchronize(stream)); /* not the legacy stream's */
                CHECK(cudaMemcpy(host_stats, b.stats, sizeof(host_stats), cudaMemcpyDeviceToHost));
                TPROF_COUNTER("loss", host_stats[0]);
                printf("epoch %ld step %4ld  loss %.4f  accuracy %5.1f%%\n", epoch, step,
                       host_stats[0], 100.0 * host_stats[1] / n);
            }
            TPROF_STEP();
        }
    }
    CHECK(cudaDeviceSynchronize());
    double ms = now_ms() - t0;
    printf("train_ms=%.3f steps=%ld step_ms=%.4f\n", ms, global_step, ms / global_step);
    fflush(stdout);

    if (T.out) fclose(T.out);
    for (int k = 0; k < 3; k++)
        layer_free(&layers[k]);
    if (graph) CHECK(cudaGraphExecDestroy(graph));
    if (stream) CHECK(cudaStreamDestroy(stream));
    float *bufs[] = {b.x, b.h1, b.h2, b.logits, b.d_logits, b.d_h2, b.d_h1, b.stats};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        CHECK(cudaFree(bufs[i]));
    CHECK(cudaFree(b.labels));
    CHECK(cudaFreeHost(host_x));
    CHECK(cudaFreeHost(host_labels));
    TPROF_SHUTDOWN();
    return isfinite(host_stats[0]) ? 0 : 1;
}
