// How the CLI prints a latency: "12.34 us", "5.678 ms", "1.234 s".
#pragma once

#include <cstdio>
#include <string>

namespace tessel {

inline std::string format_duration(double seconds) {
  char buffer[64];
  if (seconds < 1e-3)
    std::snprintf(buffer, sizeof buffer, "%.2f us", seconds * 1e6);
  else if (seconds < 1)
    std::snprintf(buffer, sizeof buffer, "%.3f ms", seconds * 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.3f s", seconds);
  return buffer;
}

}  // namespace tessel
