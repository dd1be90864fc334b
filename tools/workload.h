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

// Gives `w` the element type `dtype` (fp32, fp16, bf16, or float32, float16, bfloat16): sets its op
// template's "dtype" parameter and rebuilds its DAG; a suite case's name gains " [bfloat16]". Throws
// InputError when the name is unknown, the op takes no dtype, or a --param dtype= says otherwise.
void apply_dtype(Workload& w, const std::string& dtype);

// A --dtype value: fp32, fp16 or bf16 (or float32, float16, bfloat16); InputError for another.
DType parse_dtype_option(const std::string& dtype);

// Every case of a suite file, in file order.
std::vector<Workload> load_suite(const std::string& path);
// The same for the text of a suite; `path` names it in messages.
std::vector<Workload> parse_suite(const std::string& text, const std::string& path);

// Throws InputError naming the workload when its buffers do not fit in this machine's memory
// (schedule/interpreter/host_memory.h). Commands that allocate them (check, run, measure, tune) call
// it before any other work.
void require_fits_in_memory(const Workload& w);

}  // namespace tessel
