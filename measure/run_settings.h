// How a runner times one candidate. Sent with every run request and stored with every record.
#pragma once

#include <string>

namespace tessel {

struct RunSettings {
  double min_time_s = 0.1;  // keep sampling until the samples add up to this (GPU default: 0.05)
  int warmup = 1;           // untimed runs after the checked run
  int min_samples = 5;
  int max_samples = 10000;
  bool flush = false;       // CPU: evict the inputs from the caches before every sample; GPU: flush L2 (on by default)
  double budget_s = 5;      // stop sampling once this much time has gone by (at least one sample)
};

std::string run_settings_to_json(const RunSettings& s);
// Throws Error on malformed JSON.
RunSettings run_settings_from_json(const std::string& text);

}  // namespace tessel
