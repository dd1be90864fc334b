// The column layout of the cost-model features (private to costmodel/): scalar columns of a store
// row, then kMaxBuffers blocks of per-buffer access columns, then the arithmetic-intensity curve.
// docs/costmodel_features.md documents every column; changing this layout means bumping
// kFeatureVersion.
#pragma once

namespace tessel::feature {

// Buffers described per row (the ones with the most bytes touched).
constexpr int kMaxBuffers = 5;
// Points of the arithmetic-intensity curve.
constexpr int kCurvePoints = 10;

// The value of a per-float-operation column (the arithmetic counts, outer_prod) whose count is 0.
constexpr float kNoCount = -64.0f;

// Scalar columns of one row, in layout order.
enum Scalar : int {
  // arithmetic, log2(count x lanes x enclosing loop extents / float operations of the program)
  kFloatAddSub, kFloatMul, kFloatDiv, kFloatMinMaxAbs, kFloatCmp, kFloatSelect, kFloatExpLog, kFloatSqrt,
  kFloatAct, kIntAddSub, kIntMul, kIntDivMod, kIntMinMax, kIntCmp, kBoolLogic, kIntSelect, kCast,
  // vectorization and unrolling
  kVecLen, kVecContiguous, kVecLoadLanes, kUnrollCopies,
  // CPU parallelism
  kParallelNum, kParallelProd, kParallelDepth,
  // GPU bindings
  kIsGpu, kBlockX, kBlockY, kBlockZ, kThreadX, kThreadY, kThreadZ, kVThread, kThreadsPerBlock, kBlocks,
  // the stored buffer's allocation
  kAllocSize, kAllocShared, kAllocLocal, kAllocOuterProd, kStoreIsOutput,
  // the enclosing scope
  kOuterProd, kNumLoops, kNumReduceLoops, kInnerExtent, kNumGuards, kPrefetchLoops, kAutoUnrollMaxStep,
  // the GPU kernel holding the store, against the reference machine (FeatureTarget::sm)
  kThreadIters, kSharedPerBlock, kLocalPerThread, kBlocksPerSm, kOccupancy, kSmFill, kWaves, kWaveEfficiency,
  kNumScalars
};

// Columns of one buffer block, in layout order.
enum BufferColumn : int {
  kAccRead, kAccWrite, kAccReadWrite, kBytes, kUniqueBytes, kLines, kUniqueLines, kReuseLoop, kReuseSerial,
  kReuseNone, kReuseDistIter, kReuseDistBytes, kReuseCount, kStride, kScopeShared, kScopeLocal,
  // one warp's access on the GPU: 32-byte sectors, useful bytes per sector byte, shared-memory bank ways
  kWarpSectors, kWarpEfficiency, kBankWays,
  kBufferColumns
};

constexpr int kBufferBase = kNumScalars;
constexpr int kCurveBase = kBufferBase + kMaxBuffers * kBufferColumns;
constexpr int kWidth = kCurveBase + kCurvePoints;

constexpr int buffer_column(int slot, BufferColumn c) { return kBufferBase + slot * kBufferColumns + c; }

}  // namespace tessel::feature
