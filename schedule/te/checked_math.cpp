// Checked size arithmetic and the printing of byte counts.
#include "schedule/te/checked_math.h"

#include <cstdio>

#include "schedule/te/error.h"

namespace tessel {

int64_t add_or_throw(int64_t a, int64_t b, const std::string& what) {
  if (std::optional<int64_t> r = checked_add(a, b)) return *r;
  throw InputError(what + " is beyond the int64 range (" + std::to_string(a) + " + " + std::to_string(b) + ")");
}

int64_t mul_or_throw(int64_t a, int64_t b, const std::string& what) {
  if (std::optional<int64_t> r = checked_mul(a, b)) return *r;
  throw InputError(what + " is beyond the int64 range (" + std::to_string(a) + " x " + std::to_string(b) + ")");
}

std::string format_bytes(double bytes) {
  if (bytes < 1024) return std::to_string(static_cast<int64_t>(bytes)) + (bytes == 1 ? " byte" : " bytes");
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = bytes / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < sizeof units / sizeof units[0]) {
    value /= 1024;
    ++unit;
  }
  char text[64];
  if (value >= 1e4) std::snprintf(text, sizeof text, "%.2g %s", value, units[unit]);  // beyond EiB
  else if (value == static_cast<double>(static_cast<int64_t>(value))) std::snprintf(text, sizeof text, "%.0f %s", value, units[unit]);
  else std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace tessel
