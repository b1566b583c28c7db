// The one way an options struct's validate() refuses a value: it throws
// dlcp::Error(ErrorCode::kInvalidArgument, -1, message), the message in one form,
//
//   <Struct>.<field> <what is required>, got <value>
//
// e.g. "TransportOptions.paths must be 1..64, got 0". invalid_option builds and throws it, so that
// the form is written once; validate() only says which field, what it must be, and its value.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <ratio>
#include <string>
#include <string_view>
#include <type_traits>

#include "dlcp/error.hpp"

namespace dlcp {

// How a refused value reads: numbers in their shortest exact form (0, -3, 1.5, 1e+08, nan, inf;
// one-byte integers as numbers, not characters), bools as true/false, text in quotes, durations
// with their unit.
inline std::string option_value(bool value) {
  return value ? "true" : "false";
}
inline std::string option_value(std::string_view text) {
  return "'" + std::string(text) + "'";
}
inline std::string option_value(const char* text) {  // not the bool overload
  return option_value(std::string_view(text));
}
template <class T>
requires std::is_arithmetic_v<T> std::string option_value(T value) {
  char text[64];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::string("?");
}
template <class Rep, class Period>
std::string option_value(std::chrono::duration<Rep, Period> value) {
  const std::string count = option_value(value.count());
  if constexpr (std::is_same_v<Period, std::micro>) return count + " us";
  if constexpr (std::is_same_v<Period, std::milli>) return count + " ms";
  if constexpr (std::is_same_v<Period, std::ratio<1>>) return count + " s";
  return option_value(std::chrono::duration<double>(value).count()) + " s";
}

// Throws Error(kInvalidArgument, -1, "<option> <requirement>, got <value>"): `option` names the
// struct and field ("TransportOptions.paths", "DscpTable.protected_dscp[3]"), `requirement` says
// what the field must be ("must be 1..64"), and `value` is the field's value.
template <class T>
[[noreturn]] void invalid_option(std::string_view option, std::string_view requirement,
                                 const T& value) {
  std::string message(option);
  message += ' ';
  message += requirement;
  message += ", got ";
  message += option_value(value);
  throw Error(ErrorCode::kInvalidArgument, -1, message);
}

}  // namespace dlcp
