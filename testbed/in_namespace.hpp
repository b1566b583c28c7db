// Running a piece of code inside a network namespace without moving the calling thread: a
// namespace is a per-thread property, so a short-lived thread enters it, runs the code and ends.
// What the code creates there (a socket, a TAP device) stays in that namespace, and its file
// descriptor works from any thread.
#pragma once

#include <functional>
#include <string>

namespace dlcp::testbed {

// Runs `work` in a new thread that has entered the namespace /run/netns/<name>, and waits for it.
// Rethrows what `work` throws; throws std::runtime_error when the namespace cannot be entered.
void run_in_namespace(const std::string& name, const std::function<void()>& work);

}  // namespace dlcp::testbed
