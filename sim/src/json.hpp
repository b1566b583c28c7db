// Just enough JSON for the simulator: parse the model profiles, write the results.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dlcp::sim::json {

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  double number = 0.0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;

  // Throws std::runtime_error naming the key when it is missing or of another kind.
  const Value& at(const std::string& key) const;
  double as_number() const;
  const std::string& as_string() const;
  const std::vector<Value>& as_array() const;
};

// Throws std::runtime_error with the offset of the first error.
Value parse(const std::string& text);

// A string with JSON escapes; numbers that are NaN or infinite become null.
std::string quote(const std::string& text);
std::string number(double value);

}  // namespace dlcp::sim::json
