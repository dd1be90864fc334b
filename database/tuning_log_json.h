// JSON forms of tuning-log values, shared by the JSON-lines format and `tessel db --json` output,
// so the two always name fields alike.
#pragma once

#include <nlohmann/json.hpp>

#include "database/tuning_log.h"

namespace tessel {

nlohmann::json target_json(const TargetInfo& target);

}  // namespace tessel
