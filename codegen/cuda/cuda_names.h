// Spelling IR values and names in CUDA C: exact float / int64 literals, and the table that turns
// IR names ("i.o", "A.shared") into unique identifiers. Internal to the CUDA printer.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>

namespace tessel::cuda_detail {

// %.9g round-trips every float exactly; inf and nan have no literal, so they are spelled as bits.
inline std::string float_literal(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(f)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "(-__int_as_float(0x7f800000))";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  s += "f";
  return std::signbit(f) ? "(" + s + ")" : s;
}

inline std::string int_literal(int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  std::string s = std::to_string(v);
  if (v > INT32_MAX || v < INT32_MIN) s += "LL";
  return v < 0 ? "(" + s + ")" : s;
}

// IR names ("i.o", "A.shared") -> unique C identifiers that avoid keywords and CUDA built-ins.
class NameTable {
 public:
  NameTable() {
    for (const char* r : {"auto", "bool", "break", "case", "char", "const", "continue", "default", "do", "double",
                          "else", "enum", "extern", "float", "for", "goto", "if", "int", "long", "register",
                          "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
                          "unsigned", "void", "volatile", "while", "class", "new", "delete", "this", "true", "false",
                          "template", "typename", "namespace", "using", "operator", "private", "public",
                          "protected", "virtual", "inline", "friend", "try", "catch", "throw", "asm", "and", "or",
                          "not", "xor", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "float2",
                          "float4", "make_float2", "make_float4", "min", "max", "expf", "logf", "sqrtf", "rsqrtf",
                          "tanhf", "erff", "fabsf", "powf", "fminf", "fmaxf", "main", "signbit", "isnan", "isinf"})
      used_.insert(r);
  }
  void reserve(const std::string& id) { used_.insert(id); }
  const std::string& id(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    std::string s;
    for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || s.rfind("tessel_", 0) == 0 ||
        s.rfind("kernel_", 0) == 0 || s[0] == '_')
      s = "v_" + s;
    return ids_.emplace(name, unique(s)).first->second;
  }
  // A temporary that clashes with no IR name (all IR names are registered before printing).
  std::string fresh(const std::string& stem) {
    for (int i = 0;; ++i)
      if (!used_.count(stem + std::to_string(i))) return unique(stem + std::to_string(i));
  }

 private:
  std::string unique(std::string s) {
    std::string base = s;
    for (int k = 1; used_.count(s); ++k) s = base + "_" + std::to_string(k);
    used_.insert(s);
    return s;
  }
  std::map<std::string, std::string> ids_;
  std::set<std::string> used_;
};

}  // namespace tessel::cuda_detail
