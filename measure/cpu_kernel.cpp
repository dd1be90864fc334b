#include "measure/cpu_kernel.h"

#include "measure/host_buffers.h"
#include "measure/workload_data.h"
#include "schedule/lower/lower.h"

namespace tessel {

CpuKernel build_cpu_kernel(const ComputeDAG& dag, const Trace& trace, const std::string& name) {
  State state = replay(dag, trace);
  CpuKernel k{lower(state, name), nullptr};
  k.kernel = jit_compile(k.func);
  return k;
}

CheckOutcome check_cpu_kernel(const CpuKernel& kernel, const HostTensors& inputs, const ReferenceTensors& reference,
                              const ComputeDAG& dag) {
  HostBuffers buffers(kernel.func.params);
  buffers.set_inputs(inputs);
  buffers.poison_outputs();
  kernel.kernel->run(buffers.args());
  return compare_outputs(kernel.func.params, [&](const std::string& name) { return buffers.read(name); }, reference,
                         dag);
}

CheckOutcome compare_outputs(const std::vector<BufferParam>& params,
                             const std::function<std::vector<float>(const std::string&)>& read,
                             const ReferenceTensors& reference, const ComputeDAG& dag) {
  for (const BufferParam& p : params) {
    if (!p.is_output) continue;
    const Operation& op = dag.op(p.name);
    const Tolerance tol = tolerance_for(op.dtype);
    CompareResult c = compare_with_reference(op, read(p.name), reference.at(p.name), tol.rtol, tol.atol);
    if (c.mismatches > 0) return {false, mismatch_summary(p.name, c)};
  }
  return {true, ""};
}

}  // namespace tessel
