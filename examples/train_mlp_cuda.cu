/* train_mlp_cuda.cu - the example MLP trained on a GPU, profiled by tprof.
 *
 * A two-layer perceptron (784 -> hidden -> 10, ReLU, softmax cross-entropy, plain SGD) on
 * generated data: each class is a noisy copy of its own random prototype, so the loss falls.
 * Every step runs the four stages as tprof ranges: dataloader (make a batch on the host, copy it
 * to the GPU), forward, backward, optimizer. All GPU work is this file's own kernels, one kernel
 * per launch, so kernel counts are exact for the checks in bench/gpu/.
 *
 *   train_mlp_cuda [--steps N] [--epochs E] [--batch B] [--hidden H] [--log-every K]
 *                  [--cuda-events FILE] [tprof options: --profile, --profiling.<key> <value>...]
 *
 * --cuda-events FILE times every kernel with CUDA events on the same stream and writes one JSON
 * line per step: {"step": k, "kernels": n, "kernel_us": t}, k numbered as tprof numbers steps.
 * The program prints "loss" lines and, at the end, "train_ms=... steps=... step_ms=...". */
#include <tprof.h>

#include <cuda_runtime.h>

#include <math.h>
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

enum { INPUTS = 784, CLASSES = 10, TILE = 16, MAX_KERNELS_PER_STEP = 64 };

/* ---- kernels ---------------------------------------------------------------------------------- */

/* C[m x n] = op(A) op(B), op(A) m x k, op(B) k x n, row-major; TA/TB read A/B transposed. */
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
        for (int i = 0; i < TILE; i++) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) C[(size_t)row * n + col] = acc;
}

__global__ void bias_act(float *y, const float *b, int rows, int cols, bool relu) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * cols) return;
    float v = y[i] + b[i % cols];
    y[i] = relu && v < 0.f ? 0.f : v;
}

/* Per row: softmax, the mean cross-entropy into *loss, and d(loss)/d(logits) into grad. */
__global__ void softmax_xent(const float *logits, const int *labels, float *grad, float *loss,
                             int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float *z = logits + (size_t)r * CLASSES;
    float mx = z[0], sum = 0.f;
    for (int c = 1; c < CLASSES; c++) mx = fmaxf(mx, z[c]);
    for (int c = 0; c < CLASSES; c++) sum += expf(z[c] - mx);
    for (int c = 0; c < CLASSES; c++) {
        float p = expf(z[c] - mx) / sum;
        grad[(size_t)r * CLASSES + c] = (p - (c == labels[r] ? 1.f : 0.f)) / rows;
    }
    atomicAdd(loss, (logf(sum) + mx - z[labels[r]]) / rows);
}

__global__ void relu_grad(float *g, const float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] <= 0.f) g[i] = 0.f;
}

/* Column sums of g (rows x cols): the bias gradient. */
__global__ void column_sum(const float *g, float *out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.f;
    for (int r = 0; r < rows; r++) s += g[(size_t)r * cols + c];
    out[c] = s;
}

__global__ void sgd(float *w, const float *g, float lr, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) w[i] -= lr * g[i];
}

/* ---- launches, optionally timed with CUDA events ------------------------------------------- */

typedef struct timing {
    FILE *out; /* NULL: no event timing */
    cudaEvent_t start[MAX_KERNELS_PER_STEP], stop[MAX_KERNELS_PER_STEP];
    int n;
} timing;

static timing T;

template <typename... P, typename... A>
static void launch(void (*kernel)(P...), dim3 grid, dim3 block, A... args) {
    int i = T.n;
    if (T.out && i < MAX_KERNELS_PER_STEP) CHECK(cudaEventRecord(T.start[i]));
    kernel<<<grid, block>>>(args...);
    CHECK(cudaGetLastError());
    if (T.out && i < MAX_KERNELS_PER_STEP) CHECK(cudaEventRecord(T.stop[i]));
    T.n++;
}

static void timing_step_end(long step) {
    if (!T.out) return;
    CHECK(cudaEventSynchronize(T.stop[T.n - 1]));
    double us = 0;
    for (int i = 0; i < T.n && i < MAX_KERNELS_PER_STEP; i++) {
        float ms;
        CHECK(cudaEventElapsedTime(&ms, T.start[i], T.stop[i]));
        us += ms * 1000.0;
    }
    fprintf(T.out, "{\"step\": %ld, \"kernels\": %d, \"kernel_us\": %.3f}\n", step, T.n, us);
    T.n = 0;
}

static dim3 blocks_for(int n) { return dim3((unsigned)((n + 255) / 256)); }

static dim3 gemm_grid(int m, int n) { return dim3((unsigned)((n + TILE - 1) / TILE), (unsigned)((m + TILE - 1) / TILE)); }

/* ---- the model ------------------------------------------------------------------------------ */

typedef struct mlp {
    int batch, hidden;
    float *w1, *b1, *w2, *b2;            /* parameters */
    float *gw1, *gb1, *gw2, *gb2;        /* gradients */
    float *x, *h, *logits, *dlogits, *dh, *loss;
    int *labels;
} mlp;

static float *device_floats(size_t n) {
    float *p;
    CHECK(cudaMalloc(&p, n * sizeof(float)));
    return p;
}

static float uniform(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.f;
}

static void init_params(float *dev, size_t n, float scale, unsigned *seed) {
    float *host = (float *)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) host[i] = (uniform(seed) * 2.f - 1.f) * scale;
    CHECK(cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice));
    free(host);
}

static void mlp_init(mlp *m, int batch, int hidden) {
    unsigned seed = 42;
    m->batch = batch, m->hidden = hidden;
    m->w1 = device_floats((size_t)INPUTS * hidden), m->gw1 = device_floats((size_t)INPUTS * hidden);
    m->b1 = device_floats(hidden), m->gb1 = device_floats(hidden);
    m->w2 = device_floats((size_t)hidden * CLASSES), m->gw2 = device_floats((size_t)hidden * CLASSES);
    m->b2 = device_floats(CLASSES), m->gb2 = device_floats(CLASSES);
    m->x = device_floats((size_t)batch * INPUTS);
    m->h = device_floats((size_t)batch * hidden), m->dh = device_floats((size_t)batch * hidden);
    m->logits = device_floats((size_t)batch * CLASSES);
    m->dlogits = device_floats((size_t)batch * CLASSES);
    m->loss = device_floats(1);
    CHECK(cudaMalloc(&m->labels, batch * sizeof(int)));
    init_params(m->w1, (size_t)INPUTS * hidden, sqrtf(6.f / INPUTS), &seed);
    init_params(m->w2, (size_t)hidden * CLASSES, sqrtf(6.f / hidden), &seed);
    CHECK(cudaMemset(m->b1, 0, hidden * sizeof(float)));
    CHECK(cudaMemset(m->b2, 0, CLASSES * sizeof(float)));
}

static void mlp_free(mlp *m) {
    float *bufs[] = {m->w1, m->b1, m->w2, m->b2, m->gw1, m->gb1, m->gw2, m->gb2,
                     m->x,  m->h,  m->logits, m->dlogits, m->dh, m->loss};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) CHECK(cudaFree(bufs[i]));
    CHECK(cudaFree(m->labels));
}

/* The "dataset": class c is prototype c plus noise. */
typedef struct data {
    float *protos; /* CLASSES x INPUTS */
    float *x;      /* pinned host batch */
    int *labels;
    unsigned seed;
} data;

static void data_init(data *d, int batch) {
    d->seed = 7;
    d->protos = (float *)malloc((size_t)CLASSES * INPUTS * sizeof(float));
    for (int i = 0; i < CLASSES * INPUTS; i++) d->protos[i] = uniform(&d->seed) * 2.f - 1.f;
    CHECK(cudaMallocHost(&d->x, (size_t)batch * INPUTS * sizeof(float)));
    CHECK(cudaMallocHost(&d->labels, batch * sizeof(int)));
}

static void load_batch(data *d, mlp *m) {
    TPROF_ZONE("dataloader");
    for (int r = 0; r < m->batch; r++) {
        int c = (int)(uniform(&d->seed) * CLASSES) % CLASSES;
        d->labels[r] = c;
        for (int i = 0; i < INPUTS; i++)
            d->x[(size_t)r * INPUTS + i] = d->protos[c * INPUTS + i] + (uniform(&d->seed) - 0.5f);
    }
    CHECK(cudaMemcpyAsync(m->x, d->x, (size_t)m->batch * INPUTS * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpyAsync(m->labels, d->labels, m->batch * sizeof(int), cudaMemcpyHostToDevice));
    /* the host buffers are refilled next step: wait until the copies have read them */
    CHECK(cudaStreamSynchronize(0));
}

static void forward(mlp *m) {
    TPROF_ZONE("forward");
    int B = m->batch, H = m->hidden;
    launch(gemm<false, false>, gemm_grid(B, H), dim3(TILE, TILE), m->x, m->w1, m->h, B, H, INPUTS);
    launch(bias_act, blocks_for(B * H), dim3(256), m->h, m->b1, B, H, true);
    launch(gemm<false, false>, gemm_grid(B, CLASSES), dim3(TILE, TILE), m->h, m->w2, m->logits, B,
           CLASSES, H);
    launch(bias_act, blocks_for(B * CLASSES), dim3(256), m->logits, m->b2, B, CLASSES, false);
}

static void backward(mlp *m) {
    TPROF_ZONE("backward");
    int B = m->batch, H = m->hidden;
    CHECK(cudaMemsetAsync(m->loss, 0, sizeof(float)));
    launch(softmax_xent, blocks_for(B), dim3(256), m->logits, m->labels, m->dlogits, m->loss, B);
    launch(gemm<true, false>, gemm_grid(H, CLASSES), dim3(TILE, TILE), m->h, m->dlogits, m->gw2, H,
           CLASSES, B);
    launch(column_sum, blocks_for(CLASSES), dim3(256), m->dlogits, m->gb2, B, CLASSES);
    launch(gemm<false, true>, gemm_grid(B, H), dim3(TILE, TILE), m->dlogits, m->w2, m->dh, B, H, CLASSES);
    launch(relu_grad, blocks_for(B * H), dim3(256), m->dh, m->h, B * H);
    launch(gemm<true, false>, gemm_grid(INPUTS, H), dim3(TILE, TILE), m->x, m->dh, m->gw1, INPUTS, H, B);
    launch(column_sum, blocks_for(H), dim3(256), m->dh, m->gb1, B, H);
}

static void optimizer(mlp *m, float lr) {
    TPROF_ZONE("optimizer");
    int H = m->hidden;
    launch(sgd, blocks_for(INPUTS * H), dim3(256), m->w1, m->gw1, lr, INPUTS * H);
    launch(sgd, blocks_for(H), dim3(256), m->b1, m->gb1, lr, H);
    launch(sgd, blocks_for(H * CLASSES), dim3(256), m->w2, m->gw2, lr, H * CLASSES);
    launch(sgd, blocks_for(CLASSES), dim3(256), m->b2, m->gb2, lr, CLASSES);
}

static float read_loss(const mlp *m) {
    float loss;
    CHECK(cudaMemcpy(&loss, m->loss, sizeof(float), cudaMemcpyDeviceToHost));
    return loss;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long arg_value(int *i, int argc, char **argv) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "train_mlp_cuda: %s needs a value\n", argv[*i]);
        exit(2);
    }
    return strtol(argv[++*i], NULL, 10);
}

int main(int argc, char **argv) {
    if (tprof_init(&argc, argv) != 0) return 2; /* consumes tprof's options */
    long steps = 100, epochs = 1, batch = 256, hidden = 512, log_every = 0;
    const char *events_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps")) steps = arg_value(&i, argc, argv);
        else if (!strcmp(argv[i], "--epochs")) epochs = arg_value(&i, argc, argv);
        else if (!strcmp(argv[i], "--batch")) batch = arg_value(&i, argc, argv);
        else if (!strcmp(argv[i], "--hidden")) hidden = arg_value(&i, argc, argv);
        else if (!strcmp(argv[i], "--log-every")) log_every = arg_value(&i, argc, argv);
        else if (!strcmp(argv[i], "--cuda-events") && i + 1 < argc) events_path = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--steps N] [--epochs E] [--batch B] [--hidden H] "
                            "[--log-every K] [--cuda-events FILE] [tprof options]\n", argv[0]);
            return 2;
        }
    }
    if (steps < 1 || epochs < 1 || batch < 1 || hidden < 1) {
        fprintf(stderr, "train_mlp_cuda: --steps, --epochs, --batch and --hidden must be >= 1\n");
        return 2;
    }
    if (events_path) {
        if (!(T.out = fopen(events_path, "w"))) {
            perror(events_path);
            return 1;
        }
        for (int i = 0; i < MAX_KERNELS_PER_STEP; i++) {
            CHECK(cudaEventCreate(&T.start[i]));
            CHECK(cudaEventCreate(&T.stop[i]));
        }
    }
    mlp m;
    data d;
    mlp_init(&m, (int)batch, (int)hidden);
    data_init(&d, (int)batch);
    CHECK(cudaDeviceSynchronize());

    double t0 = now_ms();
    long step = 0;
    float loss = 0.f;
    for (long e = 0; e < epochs; e++) {
        tprof_epoch((int)e);
        for (long s = 0; s < steps; s++, step++) {
            load_batch(&d, &m);
            forward(&m);
            backward(&m);
            optimizer(&m, 0.05f);
            timing_step_end(step);
            if (log_every > 0 && (step + 1) % log_every == 0)
                printf("step %ld loss %.4f\n", step + 1, read_loss(&m));
            tprof_step();
        }
        loss = read_loss(&m);
        printf("epoch %ld loss %.4f\n", e, loss);
    }
    CHECK(cudaDeviceSynchronize());
    double ms = now_ms() - t0;
    printf("train_ms=%.3f steps=%ld step_ms=%.4f\n", ms, step, ms / step);
    fflush(stdout);

    tprof_shutdown();
    if (T.out) fclose(T.out);
    mlp_free(&m);
    CHECK(cudaFreeHost(d.x));
    CHECK(cudaFreeHost(d.labels));
    free(d.protos);
    return isfinite(loss) ? 0 : 1;
}
