// Validation of the public option structs, and names of public enums.
#include <string>

#include "common/invalid_option.hpp"
#include "dlcp/error.hpp"
#include "dlcp/options.hpp"
#include "dlcp/transport.hpp"

namespace dlcp {

void TransportOptions::validate() const {
  if (world_size < 1 || world_size > 65535) {
    invalid_option("TransportOptions.world_size", "must be 1..65535", world_size);
  }
  if (rank < 0 || rank >= world_size) {
    invalid_option("TransportOptions.rank", "must be 0.." + std::to_string(world_size - 1), rank);
  }
  if (paths < 1 || paths > 64) invalid_option("TransportOptions.paths", "must be 1..64", paths);
  if (mtu != 0 && (mtu < 576 || mtu > 65536)) {
    invalid_option("TransportOptions.mtu", "must be 0 (auto) or 576..65536", mtu);
  }
  if (batch < 1 || batch > 1024) invalid_option("TransportOptions.batch", "must be 1..1024", batch);
  if (socket_buffer_bytes < 65536) {
    invalid_option("TransportOptions.socket_buffer_bytes", "must be at least 65536",
                   socket_buffer_bytes);
  }
  if (connect_timeout.count() <= 0) {
    invalid_option("TransportOptions.connect_timeout", "must be positive", connect_timeout);
  }
  if (early_arrival_ttl.count() <= 0) {
    invalid_option("TransportOptions.early_arrival_ttl", "must be positive", early_arrival_ttl);
  }
  if (feedback_interval.count() <= 0) {
    invalid_option("TransportOptions.feedback_interval", "must be positive", feedback_interval);
  }
  if (parity_members < 0 || parity_members > 255) {
    invalid_option("TransportOptions.parity_members", "must be 0 (none) .. 255", parity_members);
  }
  if (quiet_before_report.count() < 0) {
    invalid_option("TransportOptions.quiet_before_report", "must be >= 0", quiet_before_report);
  }
  if (control_rto_min.count() < 0 || control_rto_min > std::chrono::seconds(1)) {
    invalid_option("TransportOptions.control_rto_min", "must be 0 .. 1 s", control_rto_min);
  }
  if (!job_secret.empty() && (job_secret.size() < 16 || job_secret.size() > 64)) {
    invalid_option("TransportOptions.job_secret", "must be empty or 16..64 bytes",
                   job_secret.size());
  }
  if (packet_mac && job_secret.empty()) {
    invalid_option("TransportOptions.packet_mac",
                   "needs a job_secret (a MAC keyed by the job token, which every packet carries "
                   "in clear, would authenticate nothing)",
                   packet_mac);
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
    invalid_option("MessageOptions.budget_group_size", "must be 0 without a budget_group",
                   budget_group_size);
  }
  if (budget_group != 0 && (budget_group_size < 1 || budget_group_size > 65536)) {
    invalid_option("MessageOptions.budget_group_size", "must be 1..65536 with a budget_group",
                   budget_group_size);
  }
  if (num_layers < 1) invalid_option("MessageOptions.num_layers", "must be >= 1", num_layers);
  if (layer < 0 || layer >= num_layers) {
    invalid_option("MessageOptions.layer", "must be 0.." + std::to_string(num_layers - 1), layer);
  }
  if (!(loss_budget >= 0.0 && loss_budget <= 1.0)) {
    invalid_option("MessageOptions.loss_budget", "must be within [0, 1]", loss_budget);
  }
  if (deadline.count() <= 0)
    invalid_option("MessageOptions.deadline", "must be positive", deadline);
  if (contributions < 1) {
    invalid_option("MessageOptions.contributions", "must be >= 1", contributions);
  }
  if (wire != WireDtype::kFloat32 && wire != WireDtype::kBfloat16 && wire != WireDtype::kFloat16) {
    invalid_option("MessageOptions.wire", "must be a WireDtype (fp32, bf16 or fp16)",
                   static_cast<int>(wire));
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
