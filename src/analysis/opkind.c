/* opkind.c - what usually helps an op that dominates the step, by the kind its name shows.
 *
 * The recommendations name the op that takes most of the step (recommend.c); this table says
 * what to try for it. Patterns are tp_glob_match's (case-insensitive), first match wins, so the
 * specific kinds come before the general ones. Names are torch's aten ops or a program's own
 * ranges (the C demo's "linear2.backward"). */
#include "analysis/internal.h"

#include <stddef.h>

static const struct {
    const char *pattern;
    const char *hint;
} kinds[] = {
    {"*scaled_dot_product*", "use F.scaled_dot_product_attention under bf16 autocast so that "
                             "the flash or memory-efficient kernel runs (not the math one)"},
    {"*attention*", "use F.scaled_dot_product_attention under bf16 autocast (flash attention)"},
    {"*conv*", "train under bf16 autocast, use channels_last (model.to(memory_format="
               "torch.channels_last)) and torch.backends.cudnn.benchmark = True"},
    {"*lstm*", "keep cuDNN's fused LSTM (nn.LSTM on CUDA, packed sequences) and bf16 autocast"},
    {"*gru*", "keep cuDNN's fused GRU (nn.GRU on CUDA) and bf16 autocast"},
    {"*embedding*", "use sparse gradients (nn.Embedding(sparse=True)) or a smaller vocabulary"},
    {"*mm*", "a matrix product: train under bf16 autocast (or allow TF32 on a GPU), larger "
             "batches fill the cores better, and shapes that are multiples of 8"},
    {"*linear*", "a matrix product: train under bf16 autocast (or allow TF32 on a GPU), larger "
                 "batches fill the cores better, and shapes that are multiples of 8"},
    {"*matmul*", "a matrix product: train under bf16 autocast (or allow TF32 on a GPU), larger "
                 "batches fill the cores better, and shapes that are multiples of 8"},
    {"*norm*", "fuse it with its neighbours (torch.compile) or use the fused kernel (apex / "
               "torch's fused RMSNorm)"},
    {"*softmax*", "fuse it into the attention (F.scaled_dot_product_attention) or compile"},
    {"*copy*", "a copy: create tensors on the device and in their final dtype and layout "
               "(no .to()/.contiguous() every step), copy with non_blocking=True"},
    {"aten::to", "a copy: create tensors on the device and in their final dtype and layout, "
                 "copy with non_blocking=True"},
    {"*index*", "gather and scatter: batch the indexing, avoid boolean masks in the step"},
    {"*", "fuse it with its neighbours (torch.compile), or check it needs to run every step"},
};

const char *tp_op_kind_hint(const char *name) {
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (tp_glob_match(kinds[i].pattern, name)) return kinds[i].hint;
    return kinds[sizeof(kinds) / sizeof(kinds[0]) - 1].hint;
}
