// Names and addresses of the testbed's parts, as pure functions of the options.
//
// With two sites, hosts are split between them and each site has its own spine bridges; spine k
// of site 0 and spine k of site 1 are joined by a long link (long_link.hpp) through a TAP port
// `wan` in each, so each spine's subnet spans both sites and every address and route below stays
// the same.
//
// Host i lives in namespace <prefix>-h<i> with a host address 10.0.0.(i+1)/24 (no prefix route) on
// interface `host` and one interface eth<k> per spine, addressed 10.(k+1).0.(i+1)/24. Spine k is
// namespace <prefix>-s<k> holding bridge br0 with one port h<i> per host. TCP to a host address is
// routed over every spine with layer-4 ECMP (one path per flow, as a fabric gives it); dlcp binds
// one data socket per spine address and sprays packets over all of them.
#pragma once

#include <string>
#include <vector>

#include "testbed_options.hpp"

namespace dlcp::testbed {

std::string host_namespace(const TestbedOptions& options, int host);
// Spine k of site 0 is <prefix>-s<k>; of site 1 (TestbedOptions::sites = 2), <prefix>-s<k>-site1.
std::string spine_namespace(const TestbedOptions& options, int spine, int site = 0);
// The site of a host: the first hosts * 1 / sites hosts are site 0's, the rest site 1's.
int site_of_host(const TestbedOptions& options, int host);
// Every namespace the testbed creates, hosts first.
std::vector<std::string> all_namespaces(const TestbedOptions& options);

// The host of a job's process `process` (its workers first, then its servers) on `hosts` hosts:
// workers fill the hosts in consecutive blocks (as torchrun numbers a node's ranks, so that ring
// neighbours share a host where they can), one each while there are no more workers than hosts;
// servers go one per host in turn.
int host_of_process(int process, int workers, int hosts);

std::string host_address(int host);              // 10.0.0.(host+1)
std::string spine_address(int host, int spine);  // 10.(spine+1).0.(host+1)
std::string host_interface(int spine);           // eth<spine>, inside the host namespace
std::string switch_port(int host);               // h<host>, inside the spine namespace
inline constexpr const char* kBridge = "br0";
inline constexpr const char* kHostInterface = "host";  // holds the host address
// The long link's TAP device in each site's spine, a port of its bridge.
inline constexpr const char* kLongLinkPort = "wan";

}  // namespace dlcp::testbed
