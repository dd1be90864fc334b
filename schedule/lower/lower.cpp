// The lowering pipeline, top to bottom. Each pass lives in its own file.
#include "schedule/lower/lower.h"

#include "schedule/lower/bound_inference.h"
#include "schedule/lower/double_buffer.h"
#include "schedule/lower/inline_stages.h"
#include "schedule/lower/insert_barriers.h"
#include "schedule/lower/loop_partition.h"
#include "schedule/lower/schedule_ops.h"
#include "schedule/lower/simplify.h"
#include "schedule/lower/storage_flatten.h"
#include "schedule/lower/unroll.h"
#include "schedule/lower/vectorize.h"

namespace tessel {

namespace {

std::vector<BufferParam> make_params(const State& state) {
  std::vector<BufferParam> params;
  for (const Operation& op : state.ops())
    if (op.is_placeholder) params.push_back(BufferParam{op.name, op.dtype, op.shape, false});
  for (const std::string& out : state.outputs()) {
    const Operation& op = state.op(out);
    params.push_back(BufferParam{op.name, op.dtype, op.shape, true});
  }
  return params;
}

}  // namespace

LoweredFunc lower(const State& state, const std::string& name, const LowerOptions& options) {
  LoweredFunc f{name, make_params(state), nullptr};
  auto after = [&](const char* pass) {
    if (options.dump) *options.dump << "// ---- after " << pass << " ----\n" << to_string(f) << "\n";
  };

  std::map<std::string, Expr> bodies = inline_stages(state);
  StageInfoMap infos = infer_bounds(state, bodies);
  f.body = schedule_ops(state, infos);
  after("schedule_ops (bound inference, predicate injection)");
  f.body = storage_flatten(f.body, f.params, state);
  after("storage_flatten");
  if (options.target == LowerTarget::Gpu) {
    f.body = insert_barriers(f.body);
    after("insert_barriers");
    f.body = double_buffer(f.body);
    after("double_buffer");
  }
  f.body = simplify(f.body);
  after("simplify");
  // On the GPU a condition may differ between the threads of a block, and a loop emitted once for
  // each of its answers would then split the block at a barrier: only its IfThenElse guards there.
  LoopPartitionOptions partition;
  partition.selects = options.target == LowerTarget::Cpu;
  // A convolution's bounds tests, hoisted for each side of the input and peeled at each tile of
  // the border, take more partitions than the tails of non-divisible splits: with 16, a 3x3
  // convolution of 64 channels at 56x56 kept tests in its inner loops and ran 1.6x slower.
  if (partition.selects) partition.max_partitions = 48;
  f.body = loop_partition(f.body, partition);
  f.body = simplify(f.body);
  after("loop_partition");
  f.body = vectorize_loops(f.body);
  after("vectorize");
  f.body = unroll_loops(f.body);
  f.body = simplify(f.body);
  if (options.target == LowerTarget::Gpu) f.body = mark_async_copies(f.body, f.params);
  after("unroll");
  verify_lowered(f, options.target, options.gpu_limits);
  return f;
}

}  // namespace tessel
