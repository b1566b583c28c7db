// Reductions the dlcp backend computes itself. dlcp's all-reduce moves float32 sums (and may
// lose a budget of them); every other op and dtype torch reduces is done exactly instead: every
// rank's tensor is gathered byte for byte and reduced here, in rank order, in the tensor's own
// dtype, so integers never pass through float32 and MIN/MAX/bitwise results are exact.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <vector>

namespace dlcp::python {

// Whether dlcp's float all-reduce carries `op` on `type` (SUM or AVG of float32, float16 or
// bfloat16): the only reductions a loss budget may apply to.
bool on_float_path(const c10d::ReduceOp& op, at::ScalarType type);

// Throws dlcp::Error(kInvalidArgument) unless `op` can reduce `type`: bitwise ops need integer
// or bool tensors, AVG a floating or complex one, MIN/MAX a real one.
void check_reducible(const c10d::ReduceOp& op, at::ScalarType type, const char* what);

// The reduction of `parts` (rank r's tensor at r, all of one dtype and size), in rank order.
at::Tensor reduce_parts(const std::vector<at::Tensor>& parts, const c10d::ReduceOp& op);

// ReduceOp's name as Python spells it.
const char* reduce_op_name(const c10d::ReduceOp& op);

}  // namespace dlcp::python
