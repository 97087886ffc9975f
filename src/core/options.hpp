#pragma once
// An env's options: the table an env declares (names, kinds, defaults,
// ranges) and the values a pool is made with, checked against it. The
// table is the only place an option is written down: Python reads it
// (fastvec.registry) for defaults and the names it accepts. Plain data,
// built once per pool; no threads involved.

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace fastvec::core {

struct OptionSpec {
  enum class Kind { kBool, kInt, kReal, kString };
  std::string name;  // the Python keyword
  Kind kind;
  double fallback = 0;  // the default (numbers; kBool: 0 or 1)
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  // kString: filled in by fastvec's registry (a ROM's path), not a keyword.
  std::string text_fallback = {};
};

using OptionTable = std::vector<OptionSpec>;

inline const char* kind_name(OptionSpec::Kind kind) {
  switch (kind) {
    case OptionSpec::Kind::kBool:
      return "bool";
    case OptionSpec::Kind::kInt:
      return "int";
    case OptionSpec::Kind::kReal:
      return "float";
    case OptionSpec::Kind::kString:
      return "str";
  }
  return "?";
}

// The values an env is made with: those given, the table's defaults for the
// rest. The constructor refuses names the table lacks and values outside
// their kind or range (std::invalid_argument naming the option); get() of a
// name the table lacks is a bug in the env (std::logic_error), never a
// silent default.
class Options {
 public:
  Options() = default;
  Options(OptionTable table, const std::map<std::string, double>& values,
          const std::map<std::string, std::string>& strings = {})
      : table_(std::move(table)) {
    for (const auto& [name, v] : values) {
      const OptionSpec& o = find(name, "got an unexpected option");
      if (o.kind == OptionSpec::Kind::kString) throw std::invalid_argument(name + " must be a string");
      check(o, v);
      values_[name] = v;
    }
    for (const auto& [name, s] : strings) {
      const OptionSpec& o = find(name, "got an unexpected option");
      if (o.kind != OptionSpec::Kind::kString) throw std::invalid_argument(name + " must be a number");
      strings_[name] = s;
    }
  }

  double get(const std::string& name) const {
    const OptionSpec& o = declared(name);
    auto it = values_.find(name);
    return it == values_.end() ? o.fallback : it->second;
  }
  bool flag(const std::string& name) const { return get(name) != 0; }
  int integer(const std::string& name) const { return static_cast<int>(get(name)); }
  const std::string& text(const std::string& name) const {
    const OptionSpec& o = declared(name);
    auto it = strings_.find(name);
    return it == strings_.end() ? o.text_fallback : it->second;
  }

  const OptionTable& table() const { return table_; }

 private:
  static std::string number(double v) {
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    std::string s = std::to_string(v);
    return s;
  }

  static void check(const OptionSpec& o, double v) {
    const bool whole = v == std::floor(v);
    switch (o.kind) {
      case OptionSpec::Kind::kBool:
        if (v != 0 && v != 1) throw std::invalid_argument(o.name + " must be a bool, got " + number(v));
        return;
      case OptionSpec::Kind::kInt:
        if (!(v >= o.low && v <= o.high) || !whole)
          throw std::invalid_argument(o.name + " must be an integer in [" + number(o.low) + ", " + number(o.high) +
                                      "], got " + number(v));
        return;
      case OptionSpec::Kind::kReal:
        if (!(v >= o.low && v <= o.high))
          throw std::invalid_argument(o.name + " must be in [" + number(o.low) + ", " + number(o.high) + "], got " +
                                      number(v));
        return;
      case OptionSpec::Kind::kString:
        return;
    }
  }

  const OptionSpec& find(const std::string& name, const char* what) const {
    for (const OptionSpec& o : table_)
      if (o.name == name) return o;
    std::string accepted;
    for (const OptionSpec& o : table_) accepted += (accepted.empty() ? "" : ", ") + o.name;
    throw std::invalid_argument(std::string(what) + " '" + name + "' (accepted: " +
                                (accepted.empty() ? "none" : accepted) + ")");
  }

  const OptionSpec& declared(const std::string& name) const {
    for (const OptionSpec& o : table_)
      if (o.name == name) return o;
    throw std::logic_error("the env reads option '" + name + "', which its option table does not declare");
  }

  OptionTable table_;
  std::map<std::string, double> values_;
  std::map<std::string, std::string> strings_;
};

}  // namespace fastvec::core
