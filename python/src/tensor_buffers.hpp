// How a torch tensor's memory is handed to a dlcp collective, which moves float32 values.
//
// A float32, contiguous, CPU tensor is used in place (no copy). Anything else goes through a
// staging copy: other floating types are converted to float32 for dlcp's all-reduce; data
// movement (broadcast, all-gather, point-to-point) carries any dtype as raw bytes, padded to
// whole floats. Anything that cannot be carried raises dlcp::Error(kInvalidArgument) naming the
// tensor and what is wrong with it.
#pragma once

#include <ATen/ATen.h>

#include <span>
#include <string>

namespace dlcp::python {

class TensorBuffer {
 public:
  // For dlcp's float all-reduce: a floating tensor (other dtypes are reduced exactly, see
  // local_reduction.hpp).
  static TensorBuffer for_reduction(const at::Tensor& tensor, const std::string& what);
  // For a broadcast or an all-gather input/output: the tensor's bytes.
  static TensorBuffer for_bytes(const at::Tensor& tensor, const std::string& what);

  std::span<float> floats() const { return floats_; }
  // Copies a staged result back into the tensor; nothing to do in place.
  void finish();

 private:
  enum class Kind { kInPlace, kConverted, kBytes };
  TensorBuffer(Kind kind, at::Tensor target, at::Tensor staging);

  Kind kind_;
  at::Tensor target_;   // the caller's tensor, detached (shares its memory)
  at::Tensor staging_;  // float32 (converted) or padded uint8 (bytes); undefined in place
  std::span<float> floats_;
};

// Throws dlcp::Error(kInvalidArgument) unless `tensor` is a dense CPU tensor.
void require_dense_cpu(const at::Tensor& tensor, const std::string& what);

// Bytes of `tensor` rounded up to whole floats: the size of its slot in a byte collective.
std::size_t padded_floats(const at::Tensor& tensor);

}  // namespace dlcp::python

namespace dlcp::python {

// Copies the bytes carried in `floats` (a float32 tensor of padded_floats(target) entries, as
// a byte collective delivered them) into `target`, reinterpreted as target's dtype.
void unpack_bytes(const at::Tensor& floats, const at::Tensor& target);
// The inverse: copies `source`'s bytes into `floats` (a float32 tensor of at least
// padded_floats(source) entries).
void pack_bytes(const at::Tensor& source, const at::Tensor& floats);

}  // namespace dlcp::python
