// Umbrella header for dlcp.
#pragma once

#include "dlcp/error.hpp"
#include "dlcp/options.hpp"
#include "dlcp/transport.hpp"
#include "dlcp/communicator.hpp"
#include "dlcp/rendezvous.hpp"
#include "dlcp/store.hpp"
