// A model stored in 16-bit floats (`--dtype fp16|bf16`): the weights and the values passed between
// kernels in float16 or bfloat16, and each kernel computing in float32 -- its 16-bit reads cast to
// float32 where they are read, its result stored back in 16 bits by its last stage. The model's
// inputs and outputs keep their float32, so that a caller feeds and reads what the model declares.
// The contractions so stored are what the GPU's tensor-core schedules take (search/gpu_schedule.h).
#pragma once

#include "frontend/graph.h"
#include "frontend/partition.h"
#include "schedule/te/expr.h"

namespace tessel {

// Stores `graph`'s float32 weights and intermediates in `dtype` (Float16 or BFloat16; Float32 leaves
// everything as it is) and rewrites each subgraph's DAG to read and write them so.
void store_in(DType dtype, Graph& graph, Partition& partition);

}  // namespace tessel
