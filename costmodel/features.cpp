// Feature extraction: one walk over the lowered program collects its stores (merging the copies that
// unrolling made of one store; store_collector.h), then each row is computed from the store's
// enclosing loops and the affine form of every access (feature_row.h). The definitions follow
// Ansor's per-store features (Zheng et al., OSDI 2020, and TVM's auto_scheduler/feature.cc) adapted
// to an IR whose vectorized and unrolled loops are already gone: vector lanes come from Ramp
// expressions, unrolling from merged copies. Here: the column names and the program's rows.
#include "costmodel/features.h"

#include <algorithm>
#include <cmath>

#include "costmodel/feature_layout.h"
#include "costmodel/feature_row.h"
#include "costmodel/store_collector.h"
#include "schedule/lower/lower.h"
#include "schedule/te/error.h"

namespace tessel {

using namespace feature;

namespace {

// A count relative to the program's float operations: log2(count / float_ops), kNoCount for 0.
double per_float_op(double count, double float_ops) { return count > 0 ? std::log2(count / float_ops) : kNoCount; }

std::vector<std::string> make_names() {
  std::vector<std::string> names = {
      "float_addsub",
      "float_mul",
      "float_div",
      "float_minmax_abs",
      "float_cmp",
      "float_select",
      "float_exp_log",
      "float_sqrt",
      "float_act",
      "int_addsub",
      "int_mul",
      "int_divmod",
      "int_minmax",
      "int_cmp",
      "bool_logic",
      "int_select",
      "cast",
      "vec_len",
      "vec_contiguous",
      "vec_load_lanes",
      "unroll_copies",
      "parallel_num",
      "parallel_prod",
      "parallel_depth",
      "is_gpu",
      "blockIdx.x",
      "blockIdx.y",
      "blockIdx.z",
      "threadIdx.x",
      "threadIdx.y",
      "threadIdx.z",
      "vthread",
      "threads_per_block",
      "blocks",
      "alloc_size",
      "alloc_shared",
      "alloc_local",
      "alloc_outer_prod",
      "store_is_output",
      "outer_prod",
      "num_loops",
      "num_reduce_loops",
      "inner_extent",
      "num_guards",
      "prefetch_loops",
      "auto_unroll_max_step",
      "thread_iters",
      "shared_per_block",
      "local_per_thread",
      "blocks_per_sm",
      "occupancy",
      "sm_fill",
      "waves",
      "wave_efficiency",
  };
  TESSEL_CHECK(static_cast<int>(names.size()) == kNumScalars, "feature names out of step with the layout");
  const char* buffer_columns[kBufferColumns] = {
      "acc_read",        "acc_write",        "acc_rw",          "bytes",        "unique_bytes",
      "lines",           "unique_lines",     "reuse_loop",      "reuse_serial", "reuse_none",
      "reuse_dist_iter", "reuse_dist_bytes", "reuse_count",     "stride",       "scope_shared",
      "scope_local",     "warp_sectors",     "warp_efficiency", "bank_ways",
  };
  for (int b = 0; b < kMaxBuffers; ++b)
    for (const char* c : buffer_columns) names.push_back("B" + std::to_string(b) + "." + c);
  for (int p = 0; p < kCurvePoints; ++p) names.push_back("ai_curve." + std::to_string(p));
  TESSEL_CHECK(static_cast<int>(names.size()) == kWidth, "feature names out of step with the layout");
  return names;
}

// The rows of `func` and, per row, the buffer its stores write.
ProgramFeatures extract_rows(const LoweredFunc& func, const FeatureTarget& target, std::vector<std::string>* stored) {
  // On the GPU each kernel (split as the CUDA printer launches them) is walked on its own.
  StoreCollector collector;
  std::vector<KernelFacts> kernels;
  if (func.body) {
    std::vector<GpuKernel> parts = target.gpu ? split_gpu_kernels(func.body) : std::vector<GpuKernel>{{func.body, {}}};
    for (const GpuKernel& part : parts) {
      std::vector<Allocation> scratch;
      for (const StmtNode* a : part.scratch) scratch.push_back(Allocation{a, 1.0});
      kernels.push_back(target.gpu ? kernel_facts(part.body) : KernelFacts{});
      collector.walk_kernel(part.body, static_cast<int>(kernels.size()) - 1, scratch);
    }
  }
  ProgramFeatures out;
  out.rows = static_cast<int>(collector.groups.size());
  out.values.assign(static_cast<size_t>(out.rows) * kWidth, 0.0f);
  // Rows hold raw counts in the arithmetic and outer_prod columns until the program's float
  // operations are known (in double: float would round counts past 2^24).
  std::vector<double> raw(static_cast<size_t>(out.rows) * (kCast + 2), 0.0);
  double float_ops = 0;
  for (int r = 0; r < out.rows; ++r) {
    const StoreGroup& g = collector.groups[r];
    float* row = out.values.data() + static_cast<size_t>(r) * kWidth;
    double* counts = raw.data() + static_cast<size_t>(r) * (kCast + 2);
    RowBuilder(g, kernels[g.kernel], func, target, row, counts).build();
    for (int c = kFloatAddSub; c <= kFloatAct; ++c) float_ops += counts[c];
    if (stored) stored->push_back(g.stores.front()->buffer);
  }
  float_ops = std::max(float_ops, 1.0);
  for (int r = 0; r < out.rows; ++r) {
    float* row = out.values.data() + static_cast<size_t>(r) * kWidth;
    const double* counts = raw.data() + static_cast<size_t>(r) * (kCast + 2);
    for (int c = kFloatAddSub; c <= kCast; ++c) row[c] = static_cast<float>(per_float_op(counts[c], float_ops));
    row[kOuterProd] = static_cast<float>(per_float_op(counts[kCast + 1], float_ops));
  }
  return out;
}

}  // namespace

int feature_width() { return kWidth; }

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = make_names();
  return names;
}

ProgramFeatures extract_features(const LoweredFunc& func, const FeatureTarget& target) {
  return extract_rows(func, target, nullptr);
}

ProgramFeatures features_of_schedule(const ComputeDAG& dag, const Trace& trace, const FeatureTarget& target) {
  State state = replay(dag, trace);
  LowerOptions options;
  options.target = target.gpu ? LowerTarget::Gpu : LowerTarget::Cpu;
  options.gpu_limits = target.gpu_limits;
  LoweredFunc func = lower(state, "features", options);
  std::vector<std::string> stored;
  ProgramFeatures features = extract_rows(func, target, &stored);
  // The unroll pass consumes auto_unroll_max_step pragmas, the trace still holds them. A row gets
  // the pragma of the stage it stores into, its cache stages included (C.local for C).
  for (const Step& step : trace.steps) {
    if (step.kind != StepKind::Pragma || step.pragma != "auto_unroll_max_step") continue;
    for (int r = 0; r < features.rows; ++r) {
      const std::string& buffer = stored[r];
      if (buffer == step.stage || buffer.rfind(step.stage + ".", 0) == 0)
        features.values[static_cast<size_t>(r) * kWidth + kAutoUnrollMaxStep] =
            static_cast<float>(log1p2(static_cast<double>(step.value)));
    }
  }
  return features;
}

}  // namespace tessel
