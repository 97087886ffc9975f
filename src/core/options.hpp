#pragma once
// An env's options: the table an env declares (names, kinds, defaults,
// ranges) and the values a pool is made with, checked against it. The
// table is the only place an option is written down: Python reads it
// (fastvec.registry) for defaults and the names it accepts. Plain data,
// built once per pool; no threads involved.

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace fastvec::core {

struct OptionSpec {
  // kString: filled in by fastvec's registry (a ROM's path), not a keyword.
  // kFile: a keyword naming a file (MuJoCo's xml_file); text_fallback is the
  //   default, which fastvec's registry resolves to a path as for a user's.
  // kRange: a (low, high) pair of reals (gymnasium's healthy_z_range, ...),
  //   fallback and fallback_high its default; each is checked against low, high.
  // kName: an int index or a name (Ant's main_body), given as text: "index:<n>" or "name:<s>".
  // kText: a keyword taking a str, None (given as ""), a list of str (FrozenLake's desc, given as its lines
  //   joined by '\n') or a tuple of numbers (its reward_schedule, given as their reprs joined by ',').
  enum class Kind { kBool, kInt, kReal, kString, kFile, kRange, kName, kText };
  std::string name;  // the Python keyword
  Kind kind;
  double fallback = 0;  // the default (numbers; kBool: 0 or 1)
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  std::string text_fallback = {};  // kString, kFile, kName
  double fallback_high = 0;        // kRange
};

inline bool is_text(OptionSpec::Kind kind) {
  return kind == OptionSpec::Kind::kString || kind == OptionSpec::Kind::kFile || kind == OptionSpec::Kind::kName ||
         kind == OptionSpec::Kind::kText;
}

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
    case OptionSpec::Kind::kFile:
      return "file";
    case OptionSpec::Kind::kRange:
      return "range";
    case OptionSpec::Kind::kName:
      return "int|str";
    case OptionSpec::Kind::kText:
      return "text";
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
          const std::map<std::string, std::string>& strings = {},
          const std::map<std::string, std::array<double, 2>>& ranges = {})
      : table_(std::move(table)) {
    for (const auto& [name, v] : values) {
      const OptionSpec& o = find(name, "got an unexpected option");
      if (is_text(o.kind)) throw std::invalid_argument(name + " must be a string");
      if (o.kind == OptionSpec::Kind::kRange) throw std::invalid_argument(name + " must be a (low, high) pair");
      check(o, v);
      values_[name] = v;
    }
    for (const auto& [name, s] : strings) {
      const OptionSpec& o = find(name, "got an unexpected option");
      if (!is_text(o.kind)) throw std::invalid_argument(name + " must be a number");
      strings_[name] = s;
    }
    for (const auto& [name, r] : ranges) {
      const OptionSpec& o = find(name, "got an unexpected option");
      if (o.kind != OptionSpec::Kind::kRange) throw std::invalid_argument(name + " must be a number");
      for (double v : r)
        if (std::isnan(v) || v < o.low || v > o.high)
          throw std::invalid_argument(o.name + " must hold two numbers in [" + number(o.low) + ", " + number(o.high) +
                                      "], got (" + number(r[0]) + ", " + number(r[1]) + ")");
      ranges_[name] = r;
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
  std::array<double, 2> range(const std::string& name) const {
    const OptionSpec& o = declared(name);
    auto it = ranges_.find(name);
    return it == ranges_.end() ? std::array<double, 2>{o.fallback, o.fallback_high} : it->second;
  }

  const OptionTable& table() const { return table_; }

 private:
  static std::string number(double v) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
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
      case OptionSpec::Kind::kFile:
      case OptionSpec::Kind::kRange:
      case OptionSpec::Kind::kName:
      case OptionSpec::Kind::kText:
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
  std::map<std::string, std::array<double, 2>> ranges_;
};

}  // namespace fastvec::core
