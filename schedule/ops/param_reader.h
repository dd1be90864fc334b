// Private to schedule/ops: strict parsing of an op template's string parameters. Every error is an
// InputError that names the op and the parameter, so a user can fix the command line at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/ops/op_library.h"

namespace tessel::ops_detail {

class ParamReader {
 public:
  // Rejects unknown parameter names and missing required ones, fills in defaults and checks the
  // syntax of every value against its kind (integers, floats, choices, shapes).
  ParamReader(const OpTemplate& tmpl, const OpParams& params);

  const std::string& op() const { return op_; }

  int64_t positive_int(const std::string& name) const;      // > 0 (extents, strides, groups)
  int64_t non_negative_int(const std::string& name) const;  // >= 0 (padding)
  double positive_float(const std::string& name) const;     // > 0 and finite (eps)
  const std::string& choice(const std::string& name) const;
  bool flag(const std::string& name) const;  // a "0" / "1" choice
  std::vector<int64_t> shape(const std::string& name) const;
  const std::string& text(const std::string& name) const;

  // Throws InputError("op <op>: param <name>: <message>").
  [[noreturn]] void fail(const std::string& name, const std::string& message) const;

 private:
  const std::string& value(const std::string& name) const;

  std::string op_;
  OpParams values_;  // every param of the template, defaults filled in
};

// Parses "4096x4096" style shapes: one or more positive integers separated by 'x'. Returns an empty
// vector and sets `error` when malformed.
std::vector<int64_t> parse_shape(const std::string& text, std::string& error);

}  // namespace tessel::ops_detail
