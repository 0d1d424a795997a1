/* collective.c - tprof_collective_begin: a collective of a distributed loop as a range with the
 * args the cross-rank analysis matches on (analysis/ranks.h): "seq", "bytes", "Group size", and
 * "async" for a call that only starts the collective; the same args tprof.torch's collective
 * ranges carry, so C, MPI and NCCL loops are analysed and merged like torch.distributed ones. */
#include "tprof.h"

#include "model/kineto.h"

void tprof_collective_begin(const char *name, int64_t seq, int64_t bytes, int group_size,
                            int async) {
    if (!tprof_active()) return;
    tprof_begin_copy_(name ? name : "collective");
    tprof_arg_int(tp_karg_seq, seq);
    tprof_arg_int("bytes", bytes);
    tprof_arg_int(tp_karg_group_size, group_size);
    if (async) tprof_arg_int(tp_karg_async, 1);
}
