// The loop-nest IR that lowering produces and code generators consume.
//
// Semantics, written once:
//  - For runs `var` from `min` to `min + extent - 1`. Its kind says how: Serial, Parallel (iterations
//    may run concurrently on the CPU thread pool), Vectorized (removed by the vectorize pass: no
//    Vectorized loop reaches a code generator), Unrolled (removed by the unroll pass when its extent
//    is constant), ThreadBound (a GPU block/thread index; `thread_tag` names it, e.g. "threadIdx.x").
//  - Provide writes one element of an N-d tensor (before storage flattening); Store writes a flat
//    buffer at `indices[0]` (after). A Store whose value has L lanes writes L elements at a Ramp index.
//  - Allocate introduces a buffer of `extents` (row-major) in a memory scope for the extent of its body.
//  - IfThenElse runs `body[0]` when `cond` holds, else `body[1]` if present.
//  - Seq runs its children in order. Barrier synchronizes the threads of a GPU block.
//  - Prefetch is a CPU cache hint with no effect on results: elements [`indices[0]`, `indices[0]` +
//    `extent`) of the flat buffer `buffer` will be read soon. Elements outside the buffer are never
//    touched (the code generator clamps the addresses into it).
//  - AllReduce combines element `indices` of the local buffer `buffer` across the `extent` threads
//    of `thread_tag` (threadIdx.x: the whole block dimension) with `combiner` (Add, Max or Min);
//    afterwards every one of those threads holds the result. Every thread of the block must reach
//    it (like a barrier): it never sits under a condition on the thread index.
//  - Matrix is one warp-collective tensor-core operation on 16x16 tiles (16x16x16 for MmaSync),
//    executed by all 32 lanes of a warp together (never under a threadIdx.x loop). Fragments (the
//    MatrixA, MatrixB and Accumulator scopes) are a warp's registers, opaque to everything but these
//    operations; a fragment buffer's last two dimensions are tiled by 16 and a fragment operand
//    names its tile's first element. Operands, `operands[0]` the destination:
//      FillZero   acc tile := 0                                   [acc]
//      LoadA      a tile (16 rows m x 16 columns k) from memory   [a fragment, memory]
//      LoadB      b tile (16 rows k x 16 columns n) from memory   [b fragment, memory]
//      MmaSync    acc += a * b                                    [acc, a fragment, b fragment]
//      Store      acc tile (m x n) to memory                      [memory, acc]
//    A memory operand's indices are written in the tile's row and column variables (`row_var`,
//    `col_var`, 0 to 15); storage flattening turns them into the flat index of element (0, 0)
//    and a row-major or column-major stride (`row_major`, `stride`). A fragment operand's
//    flattened index is its tile's number within the fragment buffer.
//    Hopper's warpgroup operations (schedule/ir/warpgroup.h) run on the 128 threads of a
//    warpgroup (threadIdx.x = 128, never under a threadIdx.x loop):
//      WgmmaMma     acc += a * b, asynchronously     [wg acc, a memory tile, b memory tile]
//                   acc a 64 x N tile of the WgAccumulator scope (N/2 registers a thread), a a
//                   64 x 16 tile and b a 16 x N tile of 16-bit shared buffers in the swizzled
//                   layout. After flattening the acc operand's index is its first register and
//                   its `stride` the tile's register count; a memory operand is as above.
//      WgmmaFence   orders the registers' earlier writes and reads before the next WgmmaMma
//      WgmmaCommit  closes the group of WgmmaMma issued since the last commit
//      WgmmaWait    waits until at most `extent` committed groups are still running
//    FillZero of a WgAccumulator tile zeroes its registers. A WgAccumulator's elements are read
//    one by one (a Load at a register number) only by the thread that holds them.
//  - A Store with `async_copy` (GPU) copies a global load into shared memory asynchronously
//    (cp.async): the value is not there until a CommitCopies that waits for it. CommitCopies closes
//    the thread's group of copies issued since the last one (unless `async_copy` is false on it: a
//    wait only) and, when `extent` >= 0, waits until at most `extent` of its groups are still in
//    flight (a barrier then makes the data visible to all).
//  - `double_buffer` on a For (GPU) asks the double_buffer pass to give the shared tiles filled at
//    the top of each iteration `pipeline_stages` copies (two unless set), the fetches of the next
//    iterations issued before this one's work.
//  - An Allocate of a shared buffer with `swizzle_cols` > 0 lays out each copy of its tile of
//    `swizzle_rows` x `swizzle_cols` 16-bit elements in 128-byte swizzled rows
//    (schedule/ir/warpgroup.h); indices stay logical, the code generator maps them.
//  - `pragma_unroll_max_step` on a For asks the unroll pass to unroll every loop inside it whose
//    total unrolled body stays within that many statements (Ansor's auto_unroll_max_step).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "schedule/te/expr.h"

namespace tessel {

enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled, ThreadBound };
// MatrixA, MatrixB, Accumulator: a warp's tensor-core fragments (see Matrix above); WgAccumulator: a
// warpgroup's accumulator registers.
enum class MemScope : uint8_t { Global, Shared, Local, MatrixA, MatrixB, Accumulator, WgAccumulator };
enum class StmtOp : uint8_t {
  For, Provide, Store, Allocate, IfThenElse, Seq, Barrier, Prefetch, AllReduce, Matrix, CommitCopies,
};
enum class MatrixOpKind : uint8_t { FillZero, LoadA, LoadB, MmaSync, Store, WgmmaMma, WgmmaFence, WgmmaCommit, WgmmaWait };

inline bool is_fragment(MemScope s) {
  return s == MemScope::MatrixA || s == MemScope::MatrixB || s == MemScope::Accumulator ||
         s == MemScope::WgAccumulator;
}
inline bool is_warpgroup_op(MatrixOpKind k) {
  return k == MatrixOpKind::WgmmaMma || k == MatrixOpKind::WgmmaFence || k == MatrixOpKind::WgmmaCommit ||
         k == MatrixOpKind::WgmmaWait;
}

// Elements on each side of a tensor-core tile (m16n16k16).
constexpr int64_t kMatrixTile = 16;

struct MatrixOperand {
  std::string buffer;
  std::vector<Expr> indices;  // see Matrix above
  bool row_major = true;      // flattened memory operand: element (r, c) at index + r * stride + c, else
  int64_t stride = 0;         // index + r + c * stride; flattened fragment of an MmaSync: how it was loaded
};

const char* to_string(ForKind kind);
const char* to_string(MemScope scope);
const char* to_string(MatrixOpKind kind);

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtOp op;
  // For; Prefetch: `extent` is the number of elements
  std::string var;
  Expr min, extent;
  ForKind for_kind = ForKind::Serial;
  std::string thread_tag;
  int pragma_unroll_max_step = 0;
  bool double_buffer = false;
  int pipeline_stages = 2;  // with double_buffer
  // Provide / Store / Allocate / Prefetch: tensor or buffer name
  std::string buffer;
  std::vector<Expr> indices;  // Provide: N-d; Store, Prefetch: one flat index
  Expr value;
  bool async_copy = false;  // Store
  // Allocate
  DType dtype = DType::Float32;
  std::vector<int64_t> extents;
  MemScope scope = MemScope::Global;
  int64_t swizzle_rows = 0, swizzle_cols = 0;  // a swizzled shared tile (see above)
  // IfThenElse
  Expr cond;
  // AllReduce (also uses buffer, indices, thread_tag, extent)
  ExprOp combiner = ExprOp::Add;
  // Matrix (also uses var: the row variable, thread_tag: unused)
  MatrixOpKind matrix_op = MatrixOpKind::FillZero;
  std::vector<MatrixOperand> operands;
  std::string col_var;  // with `var`: a memory operand's tile row and column variables
  // For / Allocate: body[0]; IfThenElse: then, optional else; Seq: children
  std::vector<Stmt> body;
};

Stmt make_for(const std::string& var, Expr min, Expr extent, ForKind kind, Stmt body,
              const std::string& thread_tag = "", int pragma_unroll_max_step = 0);
Stmt make_provide(const std::string& tensor, std::vector<Expr> indices, Expr value);
Stmt make_store(const std::string& buffer, Expr index, Expr value);
Stmt make_allocate(const std::string& buffer, DType dtype, std::vector<int64_t> extents, MemScope scope,
                   Stmt body);
Stmt make_if(Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt make_seq(std::vector<Stmt> stmts);  // flattens nested Seqs; one child returns the child
Stmt make_barrier();
Stmt make_commit_copies(int64_t wait_groups);  // -1: commit only
Stmt make_wait_copies(int64_t wait_groups);    // wait, no commit
Stmt make_prefetch(const std::string& buffer, Expr index, int64_t elements);
Stmt make_allreduce(const std::string& buffer, std::vector<Expr> indices, ExprOp combiner,
                    const std::string& thread_tag, int64_t threads);

Stmt make_matrix(MatrixOpKind kind, std::vector<MatrixOperand> operands, const std::string& row_var = "",
                 const std::string& col_var = "");
// WgmmaFence, WgmmaCommit, and WgmmaWait allowing `pending` groups still running.
Stmt make_warpgroup_sync(MatrixOpKind kind, int64_t pending = 0);
// The buffers a Matrix statement reads (every operand but the destination; MmaSync also reads its
// accumulator).
std::vector<std::string> matrix_reads(const StmtNode& s);

// A copy of s with new children (same fields otherwise).
Stmt with_body(const Stmt& s, std::vector<Stmt> body);

// Post-order rebuild: `expr_fn` rewrites every expression field (may be null), `stmt_fn` is applied to
// each statement after its children were rebuilt and returns nullptr to keep it.
using StmtRewriter = std::function<Stmt(const Stmt&)>;
Stmt rewrite(const Stmt& s, const ExprRewriter& expr_fn, const StmtRewriter& stmt_fn);
// Calls f on every statement, pre-order.
void visit(const Stmt& s, const std::function<void(const Stmt&)>& f);
// Calls f on every expression field of every statement (not recursing into sub-expressions).
void visit_exprs(const Stmt& s, const std::function<void(const Expr&)>& f);

// A buffer a lowered function receives from its caller.
struct BufferParam {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  bool is_output = false;
};

// Elements of a parameter: the product of its shape.
int64_t num_elements(const BufferParam& p);

// What lowering hands to a code generator: `void name(void** args)` where args[i] points to
// params[i]'s data (dense, row-major).
struct LoweredFunc {
  std::string name;
  std::vector<BufferParam> params;
  Stmt body;
};

// One loop per line, two-space indentation, annotations visible, e.g.
//   parallel (i.o, 0, 32) {
//     for (k, 0, 1024) {
//       C[i, j] = C[i, j] + A[i, k]*B[k, j]
std::string to_string(const Stmt& s);
std::string to_string(const LoweredFunc& f);

}  // namespace tessel
