/* flops.h - an op's FLOPs by two conventions, computed from what a Kineto trace keeps of its
 * inputs: torch.profiler's (with_flops, key_averages()) and FlopCounterMode's
 * (torch.utils.flop_counter, which also counts the backward convolution and attention).
 *
 * torch.profiler(with_flops=True) puts FLOPs into key_averages() but, since torch 2, not into
 * the trace. With record_shapes the trace keeps each op's "Input Dims" (and, since torch 2.1,
 * "Concrete Inputs": scalars and int lists as text), which is all torch's formulas
 * (torch/csrc/profiler/util.cpp, computeFlops) read. The reader gives such ops a "flops" arg
 * computed here, so `tprof analyze` reports the FLOPs key_averages() does; the recorder computes
 * the FLOPs of the ops torch's observer records from the same texts (record/inputs.c), so both
 * share one implementation. In model/ because both the recorder and the reader use it. */
#ifndef TP_MODEL_FLOPS_H
#define TP_MODEL_FLOPS_H

#include <stddef.h>
#include <stdint.h>

/* Whether torch counts FLOPs for the op named name[0..len): aten::conv2d, mm, addmm, bmm,
 * baddbmm, mul and add (in-place variants never). */
int tp_flops_counted(const char *name, size_t len);

/* The FLOPs of op `name` (one tp_flops_counted accepts) from the JSON text of its "Input Dims"
 * and "Concrete Inputs" args (concrete may be NULL). -1 when the text does not hold what the
 * formula needs; 0 where torch's formula gives 0 (it warns then). */
int64_t tp_flops_of(const char *name, size_t len, const char *dims, size_t dims_len,
                    const char *concrete, size_t concrete_len);

/* Whether FlopCounterMode has a formula for the op named name[0..len): aten::mm, addmm, bmm,
 * baddbmm, _scaled_mm, convolution, _convolution, convolution_backward and the
 * _scaled_dot_product_{efficient,flash,cudnn}_attention ops and their _backward. Its other
 * formulas (cudnn_convolution, _slow_conv2d_forward, convolution_overrideable, the
 * _flash/_efficient_attention kernels, flex attention) name ops that a trace shows only inside
 * one of these, where FlopCounterMode does not see them (docs/METRICS.md). */
int tp_flops_fcm_counted(const char *name, size_t len);

/* FlopCounterMode's FLOPs of op `name` (one tp_flops_fcm_counted accepts), from the same texts
 * as tp_flops_of; -1 when the text does not hold what the formula needs, 0 where the shapes do
 * not fit it (FlopCounterMode would assert). */
int64_t tp_flops_fcm_of(const char *name, size_t len, const char *dims, size_t dims_len,
                        const char *concrete, size_t concrete_len);

#endif
