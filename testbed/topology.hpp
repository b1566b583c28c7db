// Names and addresses of the testbed's parts, as pure functions of the options.
//
// Host i lives in namespace <prefix>-h<i> with a host address 10.0.0.(i+1)/24 (no prefix route) on interface `host` and
// one interface eth<k> per spine, addressed 10.(k+1).0.(i+1)/24. Spine k is namespace
// <prefix>-s<k> holding bridge br0 with one port h<i> per host. TCP to a host address is routed
// over every spine with layer-4 ECMP (one path per flow, as a fabric gives it); dlcp binds one data
// socket per spine address and sprays packets over all of them.
#pragma once

#include <string>
#include <vector>

#include "testbed_options.hpp"

namespace dlcp::testbed {

std::string host_namespace(const TestbedOptions& options, int host);
std::string spine_namespace(const TestbedOptions& options, int spine);
// Every namespace the testbed creates, hosts first.
std::vector<std::string> all_namespaces(const TestbedOptions& options);

std::string host_address(int host);              // 10.0.0.(host+1)
std::string spine_address(int host, int spine);  // 10.(spine+1).0.(host+1)
std::string host_interface(int spine);           // eth<spine>, inside the host namespace
std::string switch_port(int host);               // h<host>, inside the spine namespace
inline constexpr const char* kBridge = "br0";
inline constexpr const char* kHostInterface = "host";  // holds the host address

}  // namespace dlcp::testbed
