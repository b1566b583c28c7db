#include "tensor_buffers.hpp"

#include <cstdint>

#include "argument_check.hpp"

namespace dlcp::python {
namespace {

bool usable_in_place(const at::Tensor& tensor) {
  const auto address = reinterpret_cast<std::uintptr_t>(tensor.data_ptr());
  return tensor.is_contiguous() && tensor.nbytes() % sizeof(float) == 0 &&
         address % alignof(float) == 0;
}

std::span<float> float_view(const at::Tensor& tensor) {
  return {static_cast<float*>(tensor.data_ptr()), tensor.nbytes() / sizeof(float)};
}

// A contiguous uint8 view of a contiguous tensor's bytes.
at::Tensor bytes_of(const at::Tensor& contiguous) {
  if (contiguous.scalar_type() == at::kByte) return contiguous.reshape({-1});
  return contiguous.reshape({-1}).view(at::kByte);
}

}  // namespace

void require_dense_cpu(const at::Tensor& tensor, const std::string& what) {
  require(tensor.defined(), "dlcp: ", what, " is an undefined tensor");
  require(tensor.device().is_cpu(), "dlcp: ", what, " is on ", tensor.device().str(),
          "; the dlcp backend moves CPU tensors only (copy to the CPU first)");
  require(tensor.layout() == at::kStrided, "dlcp: ", what,
          " is a sparse or otherwise non-strided tensor, which dlcp does not support");
}

std::size_t padded_floats(const at::Tensor& tensor) {
  return (tensor.nbytes() + sizeof(float) - 1) / sizeof(float);
}

TensorBuffer::TensorBuffer(Kind kind, at::Tensor target, at::Tensor staging)
    : kind_(kind), target_(std::move(target)), staging_(std::move(staging)) {
  floats_ = kind_ == Kind::kInPlace ? float_view(target_) : float_view(staging_);
}

TensorBuffer TensorBuffer::for_reduction(const at::Tensor& tensor, const std::string& what) {
  require_dense_cpu(tensor, what);
  const at::Tensor target = tensor.detach();
  const auto type = target.scalar_type();
  require(at::isFloatingType(type), "dlcp: ", what, " of dtype ", c10::toString(type),
          " cannot take dlcp's float all-reduce (it is reduced exactly instead)");
  if (type == at::kFloat && usable_in_place(target)) {
    return TensorBuffer(Kind::kInPlace, target, {});
  }
  at::Tensor staging =
      target.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true).contiguous().reshape({-1});
  return TensorBuffer(Kind::kConverted, target, std::move(staging));
}

TensorBuffer TensorBuffer::for_bytes(const at::Tensor& tensor, const std::string& what) {
  require_dense_cpu(tensor, what);
  const at::Tensor target = tensor.detach();
  if (usable_in_place(target)) return TensorBuffer(Kind::kInPlace, target, {});
  at::Tensor staging = at::zeros({static_cast<std::int64_t>(padded_floats(target) * sizeof(float))},
                                 at::TensorOptions().dtype(at::kByte));
  if (target.numel() > 0) {
    staging.narrow(0, 0, static_cast<std::int64_t>(target.nbytes()))
        .copy_(bytes_of(target.contiguous()));
  }
  return TensorBuffer(Kind::kBytes, target, std::move(staging));
}

void TensorBuffer::finish() {
  switch (kind_) {
    case Kind::kInPlace:
      return;
    case Kind::kConverted:
      target_.copy_(staging_.view(target_.sizes()));
      return;
    case Kind::kBytes:
      if (target_.numel() == 0) return;
      const auto bytes = static_cast<std::int64_t>(target_.nbytes());
      target_.copy_(staging_.narrow(0, 0, bytes).view(target_.scalar_type()).view(target_.sizes()));
      return;
  }
}

}  // namespace dlcp::python

namespace dlcp::python {

void unpack_bytes(const at::Tensor& floats, const at::Tensor& target) {
  if (target.numel() == 0) return;
  const auto bytes = static_cast<std::int64_t>(target.nbytes());
  const at::Tensor source = floats.view(at::kByte).narrow(0, 0, bytes);
  target.detach().copy_(source.view(target.scalar_type()).view(target.sizes()));
}

void pack_bytes(const at::Tensor& source, const at::Tensor& floats) {
  if (source.numel() == 0) return;
  const auto bytes = static_cast<std::int64_t>(source.nbytes());
  floats.view(at::kByte).narrow(0, 0, bytes).copy_(bytes_of(source.detach().contiguous()));
}

}  // namespace dlcp::python
