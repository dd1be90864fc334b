// Checked int64 arithmetic for sizes (extents, element and byte counts, loop trip counts) and the
// way sizes are printed. Every product or sum of user-given sizes goes through these, so that an
// overflow becomes an error that names what was being computed, never a wrapped number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tessel {

// a + b and a * b, or nullopt when the exact result does not fit in int64.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The same, throwing InputError("<what> is beyond the int64 range (a x b)") on overflow. `what`
// names the quantity for the user, e.g. "the padded height H + 2 * pad".
int64_t add_or_throw(int64_t a, int64_t b, const std::string& what);
int64_t mul_or_throw(int64_t a, int64_t b, const std::string& what);

// A byte count for people: "512 bytes", "4.0 KiB", "1.5 GiB", "3.6 TiB" (binary units, one
// decimal). `bytes` is a double so that totals beyond int64 can still be reported.
std::string format_bytes(double bytes);

}  // namespace tessel
