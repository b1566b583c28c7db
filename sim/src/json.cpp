#include "json.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace dlcp::sim::json {

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Value document() {
    Value v = value();
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  Value value() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    Value v;
    const char c = text_[pos_];
    if (c == '{') {
      v.kind = Value::Kind::kObject;
      ++pos_;
      if (consume('}')) return v;
      do {
        skip_space();
        std::string key = string();
        expect(':');
        v.object[key] = value();
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      v.kind = Value::Kind::kArray;
      ++pos_;
      if (consume(']')) return v;
      do {
        v.array.push_back(value());
      } while (consume(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Value::Kind::kString;
      v.string = string();
    } else if (literal("true")) {
      v.kind = Value::Kind::kBool;
      v.boolean = true;
    } else if (literal("false")) {
      v.kind = Value::Kind::kBool;
    } else if (literal("null")) {
      v.kind = Value::Kind::kNull;
    } else {
      const char* begin = text_.c_str() + pos_;
      char* end = nullptr;
      v.number = std::strtod(begin, &end);
      if (end == begin) fail("bad value");
      pos_ += static_cast<std::size_t>(end - begin);
      v.kind = Value::Kind::kNumber;
    }
    return v;
  }

  std::string string() {
    if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected string");
    ++pos_;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c == '\\') {
        if (pos_ >= text_.size()) fail("bad escape");
        const char e = text_[pos_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case 'b':
            c = '\b';
            break;
          case 'f':
            c = '\f';
            break;
          case 'u':
            fail("\\u escapes are not supported");
          default:
            c = e;
        }
      }
      out.push_back(c);
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  const std::string& text_;
  std::size_t pos_ = 0;
};

}  // namespace

const Value& Value::at(const std::string& key) const {
  if (kind != Kind::kObject)
    throw std::runtime_error("JSON: not an object (looking for " + key + ")");
  auto found = object.find(key);
  if (found == object.end()) throw std::runtime_error("JSON: missing key " + key);
  return found->second;
}

double Value::as_number() const {
  if (kind != Kind::kNumber) throw std::runtime_error("JSON: expected a number");
  return number;
}

const std::string& Value::as_string() const {
  if (kind != Kind::kString) throw std::runtime_error("JSON: expected a string");
  return string;
}

const std::vector<Value>& Value::as_array() const {
  if (kind != Kind::kArray) throw std::runtime_error("JSON: expected an array");
  return array;
}

Value parse(const std::string& text) {
  return Parser(text).document();
}

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out.push_back(c);
        }
    }
  }
  return out + "\"";
}

std::string number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

}  // namespace dlcp::sim::json
