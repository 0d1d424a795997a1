"""FLOPs of aten ops by torch.profiler's own formulas (torch/csrc/profiler/util.cpp,
computeFlops), so that tprof and torch.profiler(with_flops=True) agree on the same model.

torch counts aten::conv2d, aten::mm, aten::addmm, aten::bmm, aten::baddbmm, aten::mul and
aten::add (forward and backward calls alike, in-place variants never) and nothing else. A dispatch
mode sees ops below autograd, where conv2d has become aten::convolution: that op is counted by
the conv2d rule when it is a 2-D, non-transposed convolution, which is what conv2d calls.
"""
from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = ["batched_gemm", "conv2d", "gemm", "rule"]

_Tensor = torch.Tensor


def gemm(mat1: torch.Tensor, mat2: torch.Tensor) -> int:
    """aten::mm and aten::addmm: 2 x (the product of mat1's sizes without its last) x mat2's."""
    s1 = mat1.shape
    if not s1 or s1[-1] == 0:
        return 0
    return 2 * (mat1.numel() // s1[-1]) * mat2.numel()


def batched_gemm(mat1: torch.Tensor, mat2: torch.Tensor) -> int:
    """aten::bmm and aten::baddbmm: as gemm, also without mat1's batch size."""
    s1 = mat1.shape
    if not s1 or s1[0] == 0 or s1[-1] == 0:
        return 0
    return 2 * (mat1.numel() // s1[-1] // s1[0]) * mat2.numel()


def conv2d(inp: torch.Tensor, weight: torch.Tensor, stride: Sequence[int],
           padding: Sequence[int], dilation: Sequence[int], groups: int) -> int:
    """aten::conv2d: 2 x N x OH x OW x KH x KW x C_in x C_out / groups."""
    if inp.dim() != 4 or weight.dim() != 4 or not groups:
        return 0
    if len(padding) != 2 or len(dilation) != 2 or len(stride) != 2 or stride[0] * stride[1] == 0:
        return 0
    n, c_in, h, w = inp.shape
    c_out, _, kh, kw = weight.shape
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    return 2 * n * oh * ow * kh * kw * c_in * c_out // groups


def _first_numel(args: Sequence[Any]) -> int:
    return args[0].numel() if args and isinstance(args[0], _Tensor) else 0


def _convolution(args: Sequence[Any]) -> int:
    # aten::convolution(input, weight, bias, stride, padding, dilation, transposed,
    #                   output_padding, groups)
    if len(args) < 9 or args[6]:
        return 0
    return conv2d(args[0], args[1], args[3], args[4], args[5], args[8])


# schema name -> FLOPs from the op's positional arguments
_RULES: dict[str, Callable[[Sequence[Any]], int]] = {
    "aten::mm": lambda a: gemm(a[0], a[1]),
    "aten::addmm": lambda a: gemm(a[1], a[2]),
    "aten::bmm": lambda a: batched_gemm(a[0], a[1]),
    "aten::baddbmm": lambda a: batched_gemm(a[1], a[2]),
    "aten::convolution": _convolution,
    "aten::mul": _first_numel,  # torch counts the first input's elements, not the result's
    "aten::add": _first_numel,
}


def rule(schema_name: str) -> Callable[[Sequence[Any]], int] | None:
    """The FLOPs function of an op (args -> int), or None when torch counts none for it."""
    fn = _RULES.get(schema_name)
    if fn is None:
        return None

    def flops(args: Sequence[Any]) -> int:
        try:
            return fn(args)
        except Exception:  # arguments torch's formula rejects too (it warns and counts 0)
            return 0

    return flops
