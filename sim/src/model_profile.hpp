// The simulator reads the same model profiles as the testbed's training emulator, through the
// same loader (src/workload/model_profile.hpp, C++17).
#pragma once

#include "workload/model_profile.hpp"

namespace dlcp::sim {

using workload::Layer;
using workload::load_model;
using workload::ModelProfile;

}  // namespace dlcp::sim
