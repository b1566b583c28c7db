// dlcp-sim: runs a named scenario with every scheme (one child process each, since ns-3 keeps
// global state), writes <out>/<scenario>.json, prints a table and, with --json, ends with the
// JSON document on one line.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "experiment.hpp"
#include "merge.hpp"
#include "report.hpp"
#include "scenario.hpp"

namespace {

using namespace dlcp::sim;

void usage(std::ostream& out) {
  out << "usage: dlcp-sim --scenario NAME [--json] [--out DIR] [--jobs N]\n"
         "                [--schemes dlcp,dctcp,newreno,pfabric,pias] [--iterations N]\n"
         "                [--load X] [--model NAME] [--size-scale X] [--budget X] [--seed N]\n"
         "                [--servers N] [--slicing layer-order|largest-first|sharded]\n"
         "                [--collective ps|ring]\n"
         "                [--background web-search|data-mining]\n"
         "                [--buffer-kib N] [--gray-loss X] [--link-delay-us X]\n"
         "                [--tcp-min-rto-us X] [--deadline-ms N] [--parity K]\n"
         "                [--compute-jitter X] [--pfabric-rto backoff|fixed|probe]\n"
         "                [--tcp-close ns3|rfc793] [--tcp-connections per-message|persistent]\n"
         "                [--tcp-rto-floor rfc6298|linux]\n"
         "                [--eligible-threshold port|queue] [--dlcp-pacing peer|shared-band]\n"
         "                [--ablate LIST] [--merge FILE]... [--flows] [--progress-s X]\n"
         "                [--long-link-rtt-ms X] [--long-link-random-loss P]\n"
         "                [--long-link-burst-loss P] [--long-link-burst-length N]\n"
         "                [--long-link-gbps X] [--list]\n"
         "--servers N sets the parameter servers (the other hosts are workers)\n"
         "--slicing largest-first assigns the servers' slices largest first (default: in layer\n"
         "order), each to the least loaded server; sharded cuts every layer over all servers,\n"
         "as the library's parameter server cuts a buffer\n"
         "--buffer-kib N sets a 100 Gbit/s port's buffer (ports of other rates scale)\n"
         "--gray-loss X makes spine 0 drop a share X of the packets it forwards, at random\n"
         "--link-delay-us X sets every link's propagation delay (default 1 us; a host's round\n"
         "trip crosses 4 links each way through a spine)\n"
         "--tcp-min-rto-us X sets TCP's minimum retransmission timeout (DCTCP, NewReno, PIAS and\n"
         "every network's background; pFabric keeps its own)\n"
         "--deadline-ms N sets every dlcp message's deadline (default 30000, the library's); a\n"
         "message that misses it fails, and a failure ends the run at once\n"
         "--parity K sends dlcp a parity packet per K protected packets (1..255; default 0, none)\n"
         "--pfabric-rto fixed makes pFabric's TCP repeat its timeout on consecutive timeouts (of\n"
         "data and of SYNs), as pFabric's rate control does, instead of doubling it (default:\n"
         "backoff, ns-3's TCP); probe also re-sends one-byte segments after 5 consecutive\n"
         "timeouts until one is acknowledged (pFabric's probe mode)\n"
         "--tcp-close rfc793 closes a TCP receiver whose peer's FIN came before the last of the\n"
         "data as RFC 793 does (CLOSING, TIME_WAIT); ns3 (the default) leaves it in CLOSE_WAIT\n"
         "with its endpoint for the rest of the run, as ns-3.37 does, which slows long runs\n"
         "of pFabric and PIAS down\n"
         "--tcp-connections persistent carries the TCP baselines' gradient messages over one\n"
         "connection per pair of hosts, kept for the run, one message at a time (most urgent\n"
         "first) and with Linux's window rules (restart after idle, at least one segment), as\n"
         "training libraries keep theirs (default per-message: a connection, and a handshake,\n"
         "per message, as the DCTCP, pFabric and PIAS evaluations model flows)\n"
         "--tcp-rto-floor linux keeps TCP's retransmission timeout at least the minimum RTO above\n"
         "the smoothed round trip (srtt + max(floor, 4 x rttvar)), as Linux does; rfc6298 (the\n"
         "default, but linux in the long-link scenarios) floors the whole timeout, as ns-3 does\n"
         "--eligible-threshold queue (the default) refuses a drop-eligible packet once its own\n"
         "band's queue holds more than the drop-eligible share (half) of the buffer, as the\n"
         "library's switch plan gives each class's drop-eligible packets a queue of their own;\n"
         "port compares the whole port's occupancy instead (documents made before the key\n"
         "eligible_threshold was written)\n"
         "--dlcp-pacing shared-band gives dlcp's packets in the band the background shares a\n"
         "pacer of their own, which only CE marks in that band cut, and which they pass as well\n"
         "as their peer's; other marks cut the peer's pacer (default peer: every mark cuts the\n"
         "peer's pacer, as in the library)\n"
         "--compute-jitter X draws each worker's compute speed per iteration, uniform in\n"
         "[1 - X, 1 + X] (default 0: the workers compute in lockstep)\n"
         "--ablate LIST turns off, comma-separated: ecn (dlcp's packets not ECN-capable),\n"
         "precedence (no dlcp packet drop-eligible), queue-marking (ports mark per port),\n"
         "receiver-share (dlcp's receivers offer no fair share; senders pace by feedback only),\n"
         "best-effort-sharing (the policy's least urgent class moves up a band, leaving best\n"
         "effort alone in the lowest)\n"
         "--long-link-rtt-ms X sets the round trip the long links between two sites add (the\n"
         "long-link scenarios; default 10); --long-link-random-loss P loses a share P of their\n"
         "frames at random, --long-link-burst-loss P a share P in bursts of\n"
         "--long-link-burst-length N frames on average (default 0 and 0.01 in bursts of 4);\n"
         "--long-link-gbps X sets each long link's rate (default: the links together carry\n"
         "half a site's host capacity)\n"
         "--flows also writes every finished flow to <out>/<scenario>-<scheme>-flows.csv\n"
         "--progress-s X writes a progress line per scheme to stderr at most every X seconds\n"
         "(default 60; 0 turns them off)\n"
         "--merge FILE keeps the other schemes' results from an earlier run's FILE (same\n"
         "scenario, configuration and model revision) and re-runs only --schemes; given\n"
         "several times, it gathers their schemes (one scheme in two FILEs must have the same\n"
         "result in both), and --schemes none re-runs nothing\n"
         "scenarios:";
  for (const auto& name : scenario_names()) out << " " << name;
  out << "\n";
}

struct Options {
  std::string scenario;
  std::string out_dir = "sim-results";
  std::vector<std::string> merges;  // earlier documents whose other schemes are kept
  bool json = false;
  bool flows = false;  // also write every finished flow to <out>/<scenario>-<scheme>-flows.csv
  int jobs = 1;
  double progress_interval_s = 60;
};

[[noreturn]] void die(const std::string& message) {
  std::cerr << "dlcp-sim: " << message << "\n";
  usage(std::cerr);
  std::exit(2);
}

// The value `text` names among `choices`, or a refusal that lists them.
template <typename Choice>
Choice choose(const std::string& flag, const std::string& text,
              std::initializer_list<std::pair<const char*, Choice>> choices) {
  std::string names;
  for (const auto& [name, value] : choices) {
    if (text == name) return value;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  die(flag + " is one of " + names + ", not '" + text + "'");
}

double to_number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') die(flag + " needs a number, got '" + text + "'");
  return v;
}

int to_count(const std::string& flag, const std::string& text) {
  const double v = to_number(flag, text);
  if (v != std::floor(v) || std::abs(v) > 1e9) {
    die(flag + " needs a whole number, got '" + text + "'");
  }
  return static_cast<int>(v);
}

ScenarioConfig parse(int argc, char** argv, Options* options) {
  std::vector<std::pair<std::string, std::string>> overrides;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--scenario") {
      options->scenario = value();
    } else if (arg == "--json") {
      options->json = true;
    } else if (arg == "--flows") {
      options->flows = true;
    } else if (arg == "--out") {
      options->out_dir = value();
    } else if (arg == "--merge") {
      options->merges.push_back(value());
    } else if (arg == "--progress-s") {
      options->progress_interval_s = to_number(arg, value());
      if (!(options->progress_interval_s >= 0)) die("--progress-s must be 0 or more");
    } else if (arg == "--jobs") {
      options->jobs = to_count(arg, value());
      if (options->jobs < 1) die("--jobs needs at least 1");
    } else if (arg == "--list") {
      for (const auto& name : scenario_names()) {
        ScenarioConfig s;
        named_scenario(name, &s);
        std::cout << name << ": " << s.description << "\n";
      }
      std::exit(0);
    } else if (arg == "--help" || arg == "-h") {
      usage(std::cout);
      std::exit(0);
    } else if (arg.rfind("--", 0) == 0) {
      overrides.emplace_back(arg, value());
    } else {
      die("unexpected argument '" + arg + "'");
    }
  }
  if (options->scenario.empty()) die("--scenario is required");
  ScenarioConfig s;
  if (!named_scenario(options->scenario, &s)) die("unknown scenario '" + options->scenario + "'");
  for (const auto& [flag, text] : overrides) {
    if (flag == "--schemes") {
      s.schemes.clear();
      if (text == "none") {
        // Only gathers earlier documents: without one there would be nothing to report.
        if (options->merges.empty()) die("--schemes none needs --merge FILE");
        continue;
      }
      std::stringstream list(text);
      std::string name;
      while (std::getline(list, name, ',')) {
        Scheme scheme;
        if (!parse_scheme(name, &scheme)) die("unknown scheme '" + name + "'");
        s.schemes.push_back(scheme);
      }
      if (s.schemes.empty()) die("--schemes names no scheme");
    } else if (flag == "--iterations") {
      s.workload.iterations = to_count(flag, text);
    } else if (flag == "--load") {
      s.background.load = to_number(flag, text);
    } else if (flag == "--model") {
      s.workload.model = text;
    } else if (flag == "--size-scale") {
      s.workload.size_scale = to_number(flag, text);
    } else if (flag == "--budget") {
      s.workload.loss_budget = to_number(flag, text);
    } else if (flag == "--servers") {
      s.workload.servers = to_count(flag, text);
    } else if (flag == "--seed") {
      s.seed = static_cast<std::uint64_t>(to_number(flag, text));
    } else if (flag == "--background") {
      s.background.sizes = choose<FlowSizes>(
          flag, text,
          {{"web-search", FlowSizes::kWebSearch}, {"data-mining", FlowSizes::kDataMining}});
    } else if (flag == "--buffer-kib") {
      const double kib = to_number(flag, text);
      if (!(kib >= 1 && kib <= 1 << 20)) die("--buffer-kib must lie between 1 and 1048576");
      s.fabric.buffer_bytes_per_100g = static_cast<std::uint32_t>(kib * 1024);
    } else if (flag == "--gray-loss") {
      s.fabric.gray_loss = to_number(flag, text);
    } else if (flag == "--link-delay-us") {
      s.fabric.link_delay_us = to_number(flag, text);
    } else if (flag == "--compute-jitter") {
      s.workload.compute_jitter = to_number(flag, text);
    } else if (flag == "--pfabric-rto") {
      s.tcp.pfabric_timer = choose<RetransmitTimer>(flag, text,
                                                    {{"backoff", RetransmitTimer::kBackoff},
                                                     {"fixed", RetransmitTimer::kFixed},
                                                     {"probe", RetransmitTimer::kProbe}});
    } else if (flag == "--tcp-close") {
      s.tcp.early_fin_close = choose<EarlyFinClose>(
          flag, text, {{"ns3", EarlyFinClose::kNs3}, {"rfc793", EarlyFinClose::kRfc793}});
    } else if (flag == "--tcp-connections") {
      s.tcp.gradient_connections =
          choose<GradientConnections>(flag, text,
                                      {{"per-message", GradientConnections::kPerMessage},
                                       {"persistent", GradientConnections::kPersistent}});
    } else if (flag == "--tcp-rto-floor") {
      s.tcp.rto_floor = choose<RtoFloor>(
          flag, text, {{"rfc6298", RtoFloor::kRfc6298}, {"linux", RtoFloor::kLinux}});
    } else if (flag == "--dlcp-pacing") {
      s.dlcp.shared_band_pacer = choose<bool>(flag, text, {{"peer", false}, {"shared-band", true}});
    } else if (flag == "--eligible-threshold") {
      s.fabric.eligible_per_queue = choose<bool>(flag, text, {{"port", false}, {"queue", true}});
    } else if (flag == "--long-link-rtt-ms") {
      s.fabric.long_link.rtt_ms = to_number(flag, text);
    } else if (flag == "--long-link-random-loss") {
      s.fabric.long_link.random_loss = to_number(flag, text);
    } else if (flag == "--long-link-burst-loss") {
      s.fabric.long_link.burst_loss = to_number(flag, text);
    } else if (flag == "--long-link-burst-length") {
      s.fabric.long_link.burst_length = to_number(flag, text);
    } else if (flag == "--long-link-gbps") {
      s.fabric.long_link.gbps = to_number(flag, text);
    } else if (flag == "--parity") {
      s.dlcp.parity_members = to_count(flag, text);
    } else if (flag == "--deadline-ms") {
      s.dlcp.deadline_ms = to_count(flag, text);
    } else if (flag == "--tcp-min-rto-us") {
      s.tcp.min_rto_us = to_number(flag, text);
    } else if (flag == "--ablate") {
      std::stringstream list(text);
      std::string name;
      while (std::getline(list, name, ',')) {
        if (name == "ecn") {
          s.dlcp.ecn_capable = false;
        } else if (name == "precedence") {
          s.dlcp.drop_precedence = false;
        } else if (name == "queue-marking") {
          s.fabric.mark_per_queue = false;
        } else if (name == "receiver-share") {
          s.dlcp.receiver_share = false;
        } else if (name == "best-effort-sharing") {
          s.fabric.best_effort_shared = false;
        } else {
          die("--ablate takes ecn, precedence, queue-marking, receiver-share and "
              "best-effort-sharing, not '" +
              name + "'");
        }
      }
    } else if (flag == "--slicing") {
      s.workload.slicing = choose<Slicing>(flag, text,
                                           {{"layer-order", Slicing::kLayerOrder},
                                            {"largest-first", Slicing::kLargestFirst},
                                            {"sharded", Slicing::kSharded}});
    } else if (flag == "--collective") {
      s.workload.collective = choose<Collective>(
          flag, text, {{"ps", Collective::kParameterServer}, {"ring", Collective::kRingAllReduce}});
    } else {
      die("unknown option " + flag);
    }
  }
  if (const std::string problem = invalid_setting(s); !problem.empty()) die(problem);
  // A one-site scenario has no long link: accepting the options would mislabel the run.
  for (const auto& [flag, text] : overrides) {
    if (flag.rfind("--long-link-", 0) == 0 && s.fabric.sites < 2) {
      die(flag + " applies only to the two-site scenarios (long-link-16, long-link-144)");
    }
  }
  // Ring all-reduce has no servers: accepting the option would mislabel the run's description.
  for (const char* server_option : {"--servers", "--slicing"}) {
    const bool set = std::any_of(overrides.begin(), overrides.end(),
                                 [&](const auto& o) { return o.first == server_option; });
    if (set && s.workload.collective != Collective::kParameterServer) {
      die(std::string(server_option) + " applies only to the parameter server (--collective ps)");
    }
  }
  // Overrides make the named scenario's description wrong: name them where it is printed.
  std::string changed;
  for (const auto& [flag, text] : overrides) {
    if (flag != "--schemes") changed += (changed.empty() ? "" : " ") + flag + " " + text;
  }
  if (!changed.empty()) s.description += " (overridden: " + changed + ")";
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs one scheme in a child process that writes its result to `path`.
pid_t launch(const ScenarioConfig& scenario, Scheme scheme, const std::string& path,
             const std::string& flows_path, double progress_interval_s) {
  std::cout.flush();
  const pid_t pid = fork();
  if (pid < 0) die("fork failed");
  if (pid > 0) return pid;
  int status = 0;
  try {
    const std::string result = run_scheme(scenario, scheme, flows_path, progress_interval_s);
    std::ofstream(path) << result;
  } catch (const std::exception& e) {
    std::ofstream(path) << "{\"scheme\":" << json::quote(scheme_name(scheme))
                        << ",\"error\":" << json::quote(e.what()) << "}";
    status = 1;
  }
  std::_Exit(status);  // skip ns-3's and the parent's static destructors
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  const ScenarioConfig scenario = parse(argc, argv, &options);
  std::vector<SchemeOutcome> kept;
  if (!options.merges.empty()) {
    std::vector<std::string> rerun;
    for (Scheme scheme : scenario.schemes) rerun.push_back(scheme_name(scheme));
    try {
      kept = kept_outcomes(options.merges, scenario, rerun);  // checked before hours of running
    } catch (const std::exception& e) {
      std::cerr << "dlcp-sim: " << e.what() << "\n";
      return 2;
    }
  }
  // Every scheme's child writes its result there: a directory that cannot be made would lose
  // hours of simulation, so it is refused before anything runs.
  std::error_code made;
  std::filesystem::create_directories(options.out_dir, made);
  if (made || !std::filesystem::is_directory(options.out_dir)) {
    std::cerr << "dlcp-sim: --out " << options.out_dir << ": cannot make the directory"
              << (made ? ": " + made.message() : std::string()) << "\n";
    return 2;
  }

  std::vector<SchemeOutcome> outcomes(scenario.schemes.size());
  std::vector<std::string> paths;
  std::vector<pid_t> running(scenario.schemes.size(), -1);
  std::size_t next = 0;
  std::size_t active = 0;
  auto reap_one = [&] {
    int status = 0;
    const pid_t pid = wait(&status);
    for (std::size_t i = 0; i < running.size(); ++i) {
      if (running[i] != pid) continue;
      running[i] = -1;
      --active;
      SchemeOutcome& o = outcomes[i];
      o.scheme = scheme_name(scenario.schemes[i]);
      o.result_json = read_file(paths[i]);
      if (o.result_json.empty()) {
        o.result_json = "{\"scheme\":" + json::quote(o.scheme) +
                        ",\"error\":\"the simulation process died (status " +
                        std::to_string(status) + ")\"}";
      }
      o.result = json::parse(o.result_json);
      std::cerr << "dlcp-sim: " << scenario.name << " " << o.scheme << " done\n";
    }
  };
  for (Scheme scheme : scenario.schemes) {
    paths.push_back(options.out_dir + "/" + scenario.name + "." + scheme_name(scheme) +
                    ".part.json");
  }
  while (next < scenario.schemes.size() || active > 0) {
    if (next < scenario.schemes.size() && static_cast<int>(active) < options.jobs) {
      std::remove(paths[next].c_str());
      const std::string flows = options.flows
                                    ? options.out_dir + "/" + scenario.name + "-" +
                                          scheme_name(scenario.schemes[next]) + "-flows.csv"
                                    : "";
      running[next] =
          launch(scenario, scenario.schemes[next], paths[next], flows, options.progress_interval_s);
      ++active;
      ++next;
    } else {
      reap_one();
    }
  }
  for (const auto& path : paths) std::remove(path.c_str());
  for (auto& o : kept) outcomes.push_back(std::move(o));
  // dlcp first, then the baselines in their usual order, however the results were gathered.
  auto rank = [](const SchemeOutcome& o) {
    Scheme scheme;
    return parse_scheme(o.scheme, &scheme) ? static_cast<int>(scheme) : 99;
  };
  std::stable_sort(outcomes.begin(), outcomes.end(),
                   [&](const auto& a, const auto& b) { return rank(a) < rank(b); });

  const std::string document = scenario_document(scenario, outcomes);
  const std::string file = options.out_dir + "/" + scenario.name + ".json";
  std::ofstream out(file);
  out << document << "\n";
  out.close();
  print_table(std::cout, scenario, outcomes);
  std::cout << "results: " << file << "\n";
  if (options.json) std::cout << document << std::endl;
  if (!out) {
    std::cerr << "dlcp-sim: could not write " << file
              << " (the document is on stdout with --json)\n";
    return 1;
  }
  // A scheme that errored, or a dlcp run a failed message stopped early, fails the command.
  bool failed = false;
  for (const auto& o : outcomes) {
    const auto dlcp_block = o.result.object.find("dlcp");
    failed = failed || o.result.object.count("error") > 0 ||
             (dlcp_block != o.result.object.end() &&
              dlcp_block->second.object.count("first_failure") > 0);
  }
  return failed ? 1 : 0;
}
