// Validation of the public option structs, and names of public enums.
#include <stdexcept>
#include <string>

#include "dlcp/error.hpp"
#include "dlcp/options.hpp"
#include "dlcp/transport.hpp"

namespace dlcp {
namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw std::invalid_argument(what);
}

}  // namespace

void TransportOptions::validate() const {
  if (world_size < 1 || world_size > 65535) {
    invalid("TransportOptions.world_size must be 1..65535, got " + std::to_string(world_size));
  }
  if (rank < 0 || rank >= world_size) {
    invalid("TransportOptions.rank must be 0.." + std::to_string(world_size - 1) + ", got " +
            std::to_string(rank));
  }
  if (paths < 1 || paths > 64)
    invalid("TransportOptions.paths must be 1..64, got " + std::to_string(paths));
  if (mtu != 0 && (mtu < 576 || mtu > 65536)) {
    invalid("TransportOptions.mtu must be 0 (auto) or 576..65536, got " + std::to_string(mtu));
  }
  if (batch < 1 || batch > 1024)
    invalid("TransportOptions.batch must be 1..1024, got " + std::to_string(batch));
  if (socket_buffer_bytes < 65536) {
    invalid("TransportOptions.socket_buffer_bytes must be at least 65536, got " +
            std::to_string(socket_buffer_bytes));
  }
  if (connect_timeout.count() <= 0) invalid("TransportOptions.connect_timeout must be positive");
  if (early_arrival_ttl.count() <= 0)
    invalid("TransportOptions.early_arrival_ttl must be positive");
  if (feedback_interval.count() <= 0)
    invalid("TransportOptions.feedback_interval must be positive");
  if (quiet_before_report.count() < 0) invalid("TransportOptions.quiet_before_report must be >= 0");
  if (control_rto_min.count() < 0 || control_rto_min > std::chrono::seconds(1)) {
    invalid("TransportOptions.control_rto_min must be 0 .. 1 s, got " +
            std::to_string(control_rto_min.count()) + " us");
  }
  if (!job_secret.empty() && (job_secret.size() < 16 || job_secret.size() > 64)) {
    invalid("TransportOptions.job_secret must be empty or 16..64 bytes, got " +
            std::to_string(job_secret.size()));
  }
  if (packet_mac && job_secret.empty()) {
    invalid(
        "TransportOptions.packet_mac needs a job_secret: a MAC keyed by the job token, which "
        "every packet carries in clear, would authenticate nothing");
  }
  policy.validate();
  rate.validate();
  inject.validate();
}

const char* to_string(WireDtype dtype) {
  switch (dtype) {
    case WireDtype::kFloat32:
      return "fp32";
    case WireDtype::kBfloat16:
      return "bf16";
    case WireDtype::kFloat16:
      return "fp16";
  }
  return "unknown";
}

WireDtype parse_wire_dtype(const std::string& name) {
  if (name == "fp32" || name == "float32") return WireDtype::kFloat32;
  if (name == "bf16" || name == "bfloat16") return WireDtype::kBfloat16;
  if (name == "fp16" || name == "float16") return WireDtype::kFloat16;
  throw Error(ErrorCode::kInvalidArgument, -1,
              "unknown wire dtype '" + name + "' (expected fp32, bf16 or fp16)");
}

void MessageOptions::validate() const {
  if (budget_group == 0 && budget_group_size != 0) {
    invalid("MessageOptions.budget_group_size is set (" + std::to_string(budget_group_size) +
            ") without a budget_group");
  }
  if (budget_group != 0 && (budget_group_size < 1 || budget_group_size > 65536)) {
    invalid("MessageOptions.budget_group_size must be 1..65536 with a budget_group, got " +
            std::to_string(budget_group_size));
  }
  if (num_layers < 1)
    invalid("MessageOptions.num_layers must be >= 1, got " + std::to_string(num_layers));
  if (layer < 0 || layer >= num_layers) {
    invalid("MessageOptions.layer must be 0.." + std::to_string(num_layers - 1) + ", got " +
            std::to_string(layer));
  }
  if (!(loss_budget >= 0.0 && loss_budget <= 1.0)) {
    invalid("MessageOptions.loss_budget must be within [0, 1], got " + std::to_string(loss_budget));
  }
  if (deadline.count() <= 0) invalid("MessageOptions.deadline must be positive");
  if (contributions < 1) invalid("MessageOptions.contributions must be >= 1");
  if (wire != WireDtype::kFloat32 && wire != WireDtype::kBfloat16 && wire != WireDtype::kFloat16) {
    invalid("MessageOptions.wire is not a WireDtype (" + std::to_string(static_cast<int>(wire)) +
            ")");
  }
}

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kSystem:
      return "system error";
    case ErrorCode::kConnect:
      return "connect failed";
    case ErrorCode::kPeerLost:
      return "peer lost";
    case ErrorCode::kDeadline:
      return "deadline exceeded";
    case ErrorCode::kAborted:
      return "aborted";
    case ErrorCode::kProtocol:
      return "protocol violation";
  }
  return "unknown";
}

const char* to_string(Completion completion) {
  switch (completion) {
    case Completion::kComplete:
      return "complete";
    case Completion::kBoundReached:
      return "bound_reached";
    case Completion::kDeadline:
      return "deadline";
    case Completion::kAborted:
      return "aborted";
  }
  return "unknown";
}

}  // namespace dlcp
