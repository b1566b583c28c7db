#include "system_choice.hpp"

#include "dlcp/error.hpp"

namespace dlcp::tools {

bool is_dlcp_system(const std::string& system) {
  return system == "dlcp-ps" || system == "dlcp-ring" || system == "dlcp-tar";
}

void check_wire_supported(const std::string& system, WireDtype wire) {
  const auto invalid = [](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, -1, what);
  };
  if (system == "gloo" && wire == WireDtype::kBfloat16) {
    invalid("gloo has no bfloat16: its 16-bit baseline is fp16 (PyTorch DDP's fp16_compress_hook)");
  }
  if ((system == "mpi" || system == "mpi-shm") && wire != WireDtype::kFloat32) {
    invalid("the " + system +
            std::string(" baseline sends float32 only (it has no 16-bit variant), not ") +
            to_string(wire));
  }
}

std::string wire_label(const std::string& system, WireDtype wire) {
  return wire == WireDtype::kFloat32 ? system : system + " " + to_string(wire);
}

SystemChoice gloo_of_the_same_width(WireDtype wire) {
  return {"gloo", wire == WireDtype::kFloat32 ? WireDtype::kFloat32 : WireDtype::kFloat16};
}

SystemChoice parse_system_choice(const std::string& text) {
  const auto colon = text.find(':');
  SystemChoice choice;
  choice.system = text.substr(0, colon);
  try {
    if (!is_dlcp_system(choice.system) && choice.system != "gloo" && choice.system != "mpi") {
      throw Error(ErrorCode::kInvalidArgument, -1,
                  "'" + choice.system + "' is not gloo, mpi, dlcp-ps, dlcp-ring or dlcp-tar");
    }
    if (colon != std::string::npos) choice.wire = parse_wire_dtype(text.substr(colon + 1));
    check_wire_supported(choice.system, choice.wire);
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument, -1, "system '" + text + "': " + e.what());
  }
  return choice;
}

}  // namespace dlcp::tools
