/* gpu_calls.h - what the recorder asks of the GPU: attach its sources, mirror ranges to NVTX.
 *
 * Declared here, below src/gpu, as sink.h declares the default sink: the recorder calls these and
 * includes no header of src/gpu, which sits above it (src/gpu includes record/source.h). Two
 * builds define them: the CUPTI sources (src/gpu, where CUDA's headers were found at build time)
 * or src/gpu/stub.c
 * (elsewhere: no GPU source, and `gpu: on` says why). Neither links a CUDA library: libcupti,
 * libcuda and libcudart are found with dlopen at run time, so one libtprof runs with and without
 * CUDA. docs/GPU.md describes what is recorded and how each record becomes a trace event. */
#ifndef TP_RECORD_GPU_CALLS_H
#define TP_RECORD_GPU_CALLS_H

#include "tprof.h"

#include <stdint.h>

/* Joins the GPU sources the configuration asks for (`gpu`, `nsight`) to the session that just
 * started; call without the session's lock (tp_session_add_source takes it). Failures warn and
 * leave the session CPU-only. */
void tp_gpu_attach(const tprof_config *cfg);

/* More folders to search for libcupti (a NULL-terminated list that must outlive the sessions);
 * the Python binding passes those of a pip-installed CUPTI. */
void tp_gpu_set_extra_dirs(const char *const *dirs);

/* Nsight mirroring of one range as nvtxRangePushA/nvtxRangePop, on the thread that opens and
 * closes it. The recorder calls them only while tp_opts.nsight is set. */
void tp_nvtx_push(const char *name);
void tp_nvtx_pop(void);

/* An op's external correlation id pushed to CUPTI on the calling thread, so the launches it makes
 * (and their GPU work) carry it; and popped at the op's end, on the same thread. The recorder
 * pushes only while tp_opts.ext_corr is set. */
void tp_gpu_ext_push(uint64_t id);
void tp_gpu_ext_pop(void);

#endif
