#include "local_reduction.hpp"

#include "argument_check.hpp"

namespace dlcp::python {

const char* reduce_op_name(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    default:
      return "PREMUL_SUM";
  }
}

bool on_float_path(const c10d::ReduceOp& op, at::ScalarType type) {
  return (op == c10d::ReduceOp::SUM || op == c10d::ReduceOp::AVG) &&
         (type == at::kFloat || type == at::kHalf || type == at::kBFloat16);
}

void check_reducible(const c10d::ReduceOp& op, at::ScalarType type, const char* what) {
  const bool integral = at::isIntegralType(type, /*includeBool=*/true);
  const bool complex = at::isComplexType(type);
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::PRODUCT:
      require(type != at::kBool, "dlcp: ", what, " cannot use ReduceOp.", reduce_op_name(op),
              " on a bool tensor (use MIN, MAX or a bitwise op)");
      return;
    case c10d::ReduceOp::AVG:
      require(!integral, "dlcp: ", what, " cannot use ReduceOp.AVG on an integer tensor (",
              c10::toString(type), "): sum, then divide");
      return;
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::MAX:
      require(!complex, "dlcp: ", what, " cannot use ReduceOp.", reduce_op_name(op),
              " on a complex tensor");
      return;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      require(integral, "dlcp: ", what, " cannot use ReduceOp.", reduce_op_name(op),
              " with non-integral dtype ", c10::toString(type));
      return;
    default:
      require(false, "dlcp: ", what, " does not support ReduceOp.", reduce_op_name(op));
  }
}

at::Tensor reduce_parts(const std::vector<at::Tensor>& parts, const c10d::ReduceOp& op) {
  at::Tensor result = parts.at(0).clone();
  for (std::size_t rank = 1; rank < parts.size(); ++rank) {
    const at::Tensor& part = parts[rank];
    switch (op.op_) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::AVG:
        result.add_(part);
        break;
      case c10d::ReduceOp::PRODUCT:
        result.mul_(part);
        break;
      case c10d::ReduceOp::MIN:
        result = at::minimum(result, part);
        break;
      case c10d::ReduceOp::MAX:
        result = at::maximum(result, part);
        break;
      case c10d::ReduceOp::BAND:
        result.bitwise_and_(part);
        break;
      case c10d::ReduceOp::BOR:
        result.bitwise_or_(part);
        break;
      case c10d::ReduceOp::BXOR:
        result.bitwise_xor_(part);
        break;
      default:
        require(false, "dlcp: ReduceOp.", reduce_op_name(op), " is not supported");
    }
  }
  if (op == c10d::ReduceOp::AVG) result.div_(static_cast<double>(parts.size()));
  return result;
}

}  // namespace dlcp::python
