// A tuning config: the research settings of a tuning session, in one JSON file that `tessel tune
// --config FILE` and `tessel costmodel train --config FILE` read (docs/tuning_config.md):
//
//   {"costmodel": {"kind": "xgboost", "objective": "rank", "input": "programs",
//                  "network": "deepsets", "mlp_weight": 2},
//    "search":    {"strategy": "evolution", "population": 192, "generations": 3, "batch": 32},
//    "leaders":   {"retime": 3, "timings": 3, "spread": true, "yardstick": true}}
//
// Every section and field is optional (unset: the defaults that won the ablations); an unknown one
// is an error, so that a misspelt setting is never silently ignored.
#pragma once

#include <string>

#include "search/tune_options.h"

namespace tessel {

// Sets the options the config at `path` names. Throws InputError naming the file and the field.
void apply_tune_config(const std::string& path, TuneOptions& options);

// The "costmodel" section alone (what `tessel costmodel train` reads, so that one config file serves
// both commands; the other sections are checked for unknown names and otherwise not read).
CostModelChoice read_cost_model_config(const std::string& path);

}  // namespace tessel
