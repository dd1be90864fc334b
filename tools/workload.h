// A workload as the CLI names it: `--op NAME --param K=V ...` or `--suite FILE --case NAME`.
#pragma once

#include <string>
#include <vector>

#include "schedule/ops/op_library.h"

namespace tessel {

struct Workload {
  std::string name;  // the suite case, or the op with its params
  std::string op;
  OpParams params;
  ComputeDAG dag;
};

// Throws InputError saying what is wrong and where (which param, which file, which case).
Workload resolve_workload(const std::string& op, const std::vector<std::string>& params, const std::string& suite,
                          const std::string& case_name);

// Every case of a suite file, in file order.
std::vector<Workload> load_suite(const std::string& path);

}  // namespace tessel
