// The switch plan as SONiC config_db QoS tables. A commodity switch has 8 queues per port, so drop
// precedence cannot take a queue of its own: it rides on ECN instead. Protected packets are
// ECN-capable and are marked by WRED; drop-eligible packets are Not-ECT and are dropped once the
// queue passes the small threshold. SONiC's strict priority favours the highest queue index, so
// dlcp's class c (0 = most urgent) becomes traffic class and queue 7 - c.
#include <nlohmann/json.hpp>

#include "switch/switch_config.hpp"

namespace dlcp::switchconf {

std::string sonic_qos_json(const SwitchPlan& plan, const DscpTable& table,
                           const std::vector<std::string>& ports) {
  constexpr const char* kMap = "DLCP";
  nlohmann::json dscp_to_tc = nlohmann::json::object();
  for (int dscp = 0; dscp < 64; ++dscp) {
    const Queue& queue = queue_of_dscp(plan, static_cast<std::uint8_t>(dscp));
    dscp_to_tc[std::to_string(dscp)] = std::to_string(kTrafficClasses - 1 - queue.traffic_class);
  }
  nlohmann::json tc_to_queue = nlohmann::json::object();
  for (int tc = 0; tc < kTrafficClasses; ++tc) tc_to_queue[std::to_string(tc)] = std::to_string(tc);

  nlohmann::json config;
  config["DSCP_TO_TC_MAP"][kMap] = dscp_to_tc;
  config["TC_TO_QUEUE_MAP"][kMap] = tc_to_queue;
  config["SCHEDULER"]["DLCP_STRICT"] = {{"type", "STRICT"}};
  config["WRED_PROFILE"]["DLCP_PRECEDENCE"] = {
      {"ecn", table.protected_ect ? "ecn_all" : "ecn_none"},
      {"wred_green_enable", "true"},
      {"green_min_threshold", std::to_string(plan.port.drop_eligible_bytes)},
      {"green_max_threshold", std::to_string(2 * plan.port.drop_eligible_bytes)},
      {"green_drop_probability", "100"}};
  for (const std::string& port : ports) {
    config["PORT_QOS_MAP"][port] = {
        {"dscp_to_tc_map", std::string("[DSCP_TO_TC_MAP|") + kMap + "]"},
        {"tc_to_queue_map", std::string("[TC_TO_QUEUE_MAP|") + kMap + "]"}};
    config["QUEUE"][port + "|0-7"] = {{"scheduler", "[SCHEDULER|DLCP_STRICT]"},
                                      {"wred_profile", "[WRED_PROFILE|DLCP_PRECEDENCE]"}};
  }
  return config.dump(2);
}

}  // namespace dlcp::switchconf
