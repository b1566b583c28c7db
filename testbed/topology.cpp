#include "topology.hpp"

namespace dlcp::testbed {

std::string host_namespace(const TestbedOptions& options, int host) {
  return options.prefix + "-h" + std::to_string(host);
}

std::string spine_namespace(const TestbedOptions& options, int spine, int site) {
  return options.prefix + "-s" + std::to_string(spine) + (site == 0 ? "" : "-site1");
}

int site_of_host(const TestbedOptions& options, int host) {
  return host * options.sites / options.hosts;
}

std::vector<std::string> all_namespaces(const TestbedOptions& options) {
  std::vector<std::string> names;
  for (int h = 0; h < options.hosts; ++h) names.push_back(host_namespace(options, h));
  for (int site = 0; site < options.sites; ++site) {
    for (int s = 0; s < options.spines; ++s) names.push_back(spine_namespace(options, s, site));
  }
  return names;
}

int host_of_process(int process, int workers, int hosts) {
  if (process >= workers) return (process - workers) % hosts;
  if (workers <= hosts) return process;
  return static_cast<int>(static_cast<long long>(process) * hosts / workers);
}

std::string host_address(int host) {
  return "10.0.0." + std::to_string(host + 1);
}

std::string spine_address(int host, int spine) {
  return "10." + std::to_string(spine + 1) + ".0." + std::to_string(host + 1);
}

std::string host_interface(int spine) {
  return "eth" + std::to_string(spine);
}

std::string switch_port(int host) {
  return "h" + std::to_string(host);
}

}  // namespace dlcp::testbed
