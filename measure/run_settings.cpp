#include "measure/run_settings.h"

#include <nlohmann/json.hpp>

#include "schedule/te/error.h"

namespace tessel {

std::string run_settings_to_json(const RunSettings& s) {
  return nlohmann::json{{"min_time_s", s.min_time_s}, {"warmup", s.warmup},   {"min_samples", s.min_samples},
                        {"max_samples", s.max_samples}, {"flush", s.flush}, {"budget_s", s.budget_s}}
      .dump();
}

RunSettings run_settings_from_json(const std::string& text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    RunSettings s;
    s.min_time_s = j.at("min_time_s").get<double>();
    s.warmup = j.at("warmup").get<int>();
    s.min_samples = j.at("min_samples").get<int>();
    s.max_samples = j.at("max_samples").get<int>();
    s.flush = j.at("flush").get<bool>();
    s.budget_s = j.at("budget_s").get<double>();
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("bad run settings: ") + e.what());
  }
}

}  // namespace tessel
