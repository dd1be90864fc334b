// The host memory a workload needs, and the refusal of one that does not fit.
#include "schedule/interpreter/host_memory.h"

#include <unistd.h>

#include <limits>

#include "schedule/te/checked_math.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"

namespace tessel {

HostMemoryNeed host_memory_need(const ComputeDAG& dag) {
  HostMemoryNeed need;
  for (const Operation& op : dag.ops()) {
    // Bytes per element held while checking: see HostMemoryNeed.
    const int64_t width = dtype_bytes(op.dtype);
    const int64_t per_element = op.is_placeholder ? 2 * width + 8 : width + 8;
    const int64_t bytes = checked_mul(op.num_elements(), per_element).value_or(std::numeric_limits<int64_t>::max());
    need.total_bytes = checked_add(need.total_bytes, bytes).value_or(std::numeric_limits<int64_t>::max());
    if (bytes > need.largest_bytes) {
      need.largest_bytes = bytes;
      need.largest = describe_tensor(op.name, op.shape);
    }
  }
  return need;
}

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<int64_t>::max();
  return checked_mul(pages, page).value_or(std::numeric_limits<int64_t>::max());
}

void require_host_memory(const ComputeDAG& dag, int64_t available) {
  const HostMemoryNeed need = host_memory_need(dag);
  if (need.total_bytes <= available) return;
  throw InputError("the workload needs " + format_bytes(static_cast<double>(need.total_bytes)) +
                   " of host memory to run and check (the buffers, the inputs' values and the float64 "
                   "reference; the largest tensor, " + need.largest + ", takes " +
                   format_bytes(static_cast<double>(need.largest_bytes)) + "), more than this machine's " +
                   format_bytes(static_cast<double>(available)) + "; choose smaller sizes");
}

}  // namespace tessel
