/* gpu.h - what the recorder asks of the GPU: attach its sources, mirror ranges to NVTX.
 *
 * The only header of src/gpu the recorder includes. Two builds implement it: the CUPTI sources
 * (the rest of src/gpu, where CUDA's headers were found at build time) or src/gpu/stub.c
 * (elsewhere: no GPU source, and `gpu: on` says why). Neither links a CUDA library: libcupti,
 * libcuda and libcudart are found with dlopen at run time, so one libtprof runs with and without
 * CUDA. docs/GPU.md describes what is recorded and how each record becomes a trace event. */
#ifndef TP_GPU_GPU_H
#define TP_GPU_GPU_H

#include "tprof.h"

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

#endif
