// Default schedules. These patterns cover the op templates:
//  - matrix product (matmul, dense, batch_matmul): BLAS's blocking. Output tiles in parallel, the
//    reduction in chunks, each chunk of the operand read along the vector packed into a local tile,
//    a register tile of accumulators innermost (schedule_matrix_product).
//  - contraction (conv2d, and products the above does not take): Ansor's CPU multi-level tiling.
//    The output is tiled, its outer tile loops fused and run in parallel; the contraction is computed per tile
//    (in a local buffer) with a register tile of `kRegRows` x (2 vectors) accumulators innermost,
//    the reduction loops just outside it, and the epilogue (bias, activation) fused into the tile.
//  - row reduction (softmax, layernorm, rmsnorm, reduce_sum, ...): rows run in parallel; each row's
//    statistics are computed just before the row is normalized (compute_at the row loop), each
//    reduction vectorized through rfactor into `lanes` partial sums; an input far larger than the
//    caches is prefetched rows ahead while the row's arithmetic runs. A single row of dot products
//    (a matrix-vector product) runs chunks of its columns in parallel instead.
//  - window over channels in blocks (a depthwise convolution or a pool in NCHWc): rows in parallel,
//    a register tile of adjacent outputs along the row, each a vector of the block's channels, with
//    the window's loops outside it; padding inlined.
//  - elementwise: all axes fused, split into vectors, outer part parallel.
#include "search/default_schedule.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"
#include "search/schedule_patterns.h"

namespace tessel {

namespace {

constexpr int64_t kRegRows = 4;   // accumulator rows in the register tile
constexpr int64_t kRegVectors = 2;  // accumulator vectors per row
constexpr int64_t kTileRows = 32;   // output tile per parallel task
constexpr int64_t kTileCols = 64;
constexpr int64_t kProductTileRows = 128;  // a matrix product's output tile per parallel task
constexpr int64_t kMinProductTasks = 32;   // ... made smaller while it leaves fewer tasks than this
constexpr int64_t kReduceChunk = 128;      // a matrix product's reduction per packed chunk
constexpr int64_t kL1Bytes = 48 << 10;  // a core's L1 data cache (Intel since Ice Lake; 32 KiB elsewhere)
constexpr int64_t kWindowTile = 8;     // outputs along a row per register tile of a blocked window
constexpr int64_t kMaxWindow = 64;     // a window reduction's largest window (larger: a row reduction)
constexpr int64_t kUnrolledWindow = 5;  // a convolution's window columns unrolled from this many
constexpr int64_t kMostUnrolledWindow = 11;  // ... up to this many
constexpr int64_t kReduceChains = 4;  // independent accumulators in a vectorized reduction
constexpr int64_t kColumnChunkVectors = 2;  // a matrix-vector product's parallel task: this many vectors
constexpr int64_t kPrefetchMinBytes = int64_t(16) << 20;  // inputs this large stream from DRAM
constexpr int64_t kPrefetchAheadBytes = 64 << 10;         // how far ahead they are fetched

bool is_expensive(const Expr& e) {
  if (e->op == ExprOp::Call && e->math_fn() != MathFn::Abs && e->math_fn() != MathFn::Sqrt) return true;
  for (const Expr& a : e->args)
    if (is_expensive(a)) return true;
  return false;
}

class DefaultScheduler {
 public:
  DefaultScheduler(const ComputeDAG& dag, const CpuTargetSpec& target)
      : dag_(dag), b_(dag), lanes_(std::max(1, target.vector_lanes)) {}

  Trace run() {
    const Operation& out = dag_.ops().back();
    const Operation* contraction = find_contraction(dag_);
    if (contraction) {
      schedule_contraction(*contraction, out);
    } else if (const Operation* window = blocked_window()) {
      schedule_blocked_window(*window, out);
    } else if (has_reduction()) {
      schedule_row_reduction(out);
    } else {
      inline_all_but(out.name);
      schedule_elementwise(out.name);
    }
    return b_.trace();
  }

 private:
  // Default steps are chosen for every shape; one that does not fit a shape (a loop too short to
  // split, say) is skipped rather than failing the whole schedule.
  bool apply(const Step& step) { return b_.apply(step); }
  const State& state() const { return b_.state(); }

  bool has_reduction() const {
    for (const Operation& op : dag_.ops())
      if (op.reduce != ReduceKind::None) return true;
    return false;
  }

  void inline_all_but(const std::string& keep) {
    for (const Operation& op : dag_.ops())
      if (!op.is_placeholder && op.name != keep && op.reduce == ReduceKind::None) apply(compute_inline_step(op.name));
  }

  // The loop's extent; 0 when the stage has no such loop (a step that named it was refused).
  int64_t extent_of(const std::string& stage, const std::string& loop) const {
    const Stage& s = state().stage(stage);
    const int i = s.find_var(loop);
    return i >= 0 ? s.vars[static_cast<size_t>(i)].extent : 0;
  }

  // Padding of an image: rows in parallel, each row's values a vector at a time. Fused with the
  // rows, each lane would find its row and column by division to test the border.
  void schedule_padding(const std::string& name) {
    std::vector<std::string> loops = state().stage(name).leaf_names();
    const std::string col = loops.back();
    // Channels in blocks ([..., row, column, block]): a block is a vector, the row's columns a loop.
    if (loops.size() >= 3 && is_channel_block(extent_of(name, col))) {
      apply(annotate_step(name, col, Annotation::Vectorize));
      parallel_rows(name, {loops.begin(), loops.end() - 2});
      return;
    }
    if (loops.size() < 2 || extent_of(name, col) < lanes_ || !apply(split_step(name, col, {lanes_})))
      return schedule_elementwise(name);
    apply(annotate_step(name, col + ".1", Annotation::Vectorize));
    parallel_rows(name, {loops.begin(), loops.end() - 1});
  }

  // The leading loops `rows` (outermost first) fused into one parallel loop.
  void parallel_rows(const std::string& name, const std::vector<std::string>& rows) {
    std::string par = rows[0];
    if (rows.size() > 1 && apply(fuse_step(name, rows))) par = state().stage(name).leaf_names()[0];
    apply(annotate_step(name, par, Annotation::Parallel));
  }

  void schedule_elementwise(const std::string& name) {
    std::vector<std::string> loops = state().stage(name).leaf_names();
    std::string flat = loops[0];
    if (loops.size() > 1 && apply(fuse_step(name, loops))) flat = state().stage(name).leaf_names()[0];
    if (apply(split_step(name, flat, {lanes_}))) {
      apply(annotate_step(name, flat + ".0", Annotation::Parallel));
      apply(annotate_step(name, flat + ".1", Annotation::Vectorize));
    }
  }

  // A last axis this long is a block of channels (NCHWc): one vector, or half of one (blocks of 8
  // with 16 lanes).
  bool is_channel_block(int64_t extent) const { return extent == lanes_ || extent * 2 == lanes_; }

  // A reduction over a small window whose output's last axis is a block of channels (one vector, or
  // half of one) and whose row (the axis before it) is at least two long: [..., row, block].
  const Operation* blocked_window() const {
    const Operation* found = nullptr;
    for (const Operation& op : dag_.ops()) {
      if (op.reduce == ReduceKind::None) continue;
      if (found) return nullptr;  // one reduction only
      found = &op;
    }
    if (!found || found->axes.size() < 3 || found->reduce_axes.size() != 2) return nullptr;
    const int64_t block = found->axes.back().extent, row = found->axes[found->axes.size() - 2].extent;
    const int64_t window = found->reduce_axes[0].extent * found->reduce_axes[1].extent;
    if (!is_channel_block(block) || row < 2 || window > kMaxWindow) return nullptr;
    // The block is the reads' innermost dimension, which the window does not move along (in NCHW a
    // row 16 long would pass the test above, its columns read at ow + rw).
    for (const Expr& read : tensor_reads(found->body)) {
      const Expr& innermost = read->args.back();
      if (!uses_var(innermost, found->axes.back().name)) return nullptr;
      for (const Axis& r : found->reduce_axes)
        if (uses_var(innermost, r.name)) return nullptr;
    }
    return found;
  }

  // Rows (the axes before the row, fused) in parallel; each row in tiles of kWindowTile outputs
  // (a length that divides the row where one is near), the window's loops outside the tile so that
  // each weight vector (a depthwise filter tap) is loaded once per tile and the tile's accumulators
  // stay in registers. Padding is inlined, as a contraction's is: the lowering's loop partitioning
  // decides its bounds tests once per tile at the border and leaves the other tiles' window
  // guard-free. A padded copy of the input costs a pass over memory when computed up front (a
  // depthwise convolution of MobileNetV2 ran 2.9x slower so on two cores) and a copy of three
  // input rows per output row when computed per task (1.1-2.7x slower than inlined for each of
  // MobileNetV2's depthwise convolutions on two cores, 2.0-2.7x from 14x14 to 112x112).
  void schedule_blocked_window(const Operation& window, const Operation& out) {
    std::string compute = window.name;
    if (window.name == out.name) {
      apply(cache_write_step(out.name, MemScope::Local));
      compute = cache_stage_name(out.name, MemScope::Local);
    }
    inline_all_but_reduction(window.name, out.name);
    std::vector<std::string> loops = state().stage(out.name).leaf_names();
    const std::string row = loops[loops.size() - 2], block = loops.back();
    const int64_t tile = dividing_tile(extent_of(out.name, row), kWindowTile);
    std::string tile_loop = row;
    std::vector<std::string> rows(loops.begin(), loops.end() - 2);
    if (extent_of(out.name, row) > tile && apply(split_step(out.name, row, {tile}))) {
      tile_loop = row + ".0";
      std::vector<std::string> order = rows;
      order.insert(order.end(), {row + ".0", row + ".1", block});
      apply(reorder_step(out.name, order));
    } else {
      rows.push_back(row);  // a row of one tile: the tile is the task
    }
    std::string par = rows.empty() ? tile_loop : rows[0];
    if (rows.size() > 1 && apply(fuse_step(out.name, rows))) par = state().stage(out.name).leaf_names()[0];
    apply(annotate_step(out.name, par, Annotation::Parallel));
    apply(annotate_step(out.name, block, Annotation::Vectorize));
    if (!apply(compute_at_step(compute, out.name, rows.back() == row ? par : tile_loop))) return;
    // The computed stage per tile: [outer spatial..., window..., row (unrolled), block (vector)].
    const Stage& cs = state().stage(compute);
    std::vector<std::string> spatial, reduce;
    for (int a = 0; a < cs.num_roots; ++a) (a < cs.num_spatial_roots ? spatial : reduce).push_back(cs.vars[a].name);
    std::vector<std::string> order(spatial.begin(), spatial.end() - 2);
    order.insert(order.end(), reduce.begin(), reduce.end());
    order.insert(order.end(), {spatial[spatial.size() - 2], spatial.back()});
    apply(reorder_step(compute, order));
    apply(annotate_step(compute, spatial[spatial.size() - 2], Annotation::Unroll));
    apply(annotate_step(compute, reduce.back(), Annotation::Unroll));
    apply(annotate_step(compute, spatial.back(), Annotation::Vectorize));
  }

  // Row-wise: out[rows..., cols]; every reduction over the last axis.
  void schedule_row_reduction(const Operation& out) {
    // Cheap elementwise stages are inlined; an expensive one read twice (softmax's exp) is computed
    // once per row instead.
    for (const Operation& op : dag_.ops()) {
      if (op.is_placeholder || op.name == out.name || op.reduce != ReduceKind::None) continue;
      if (kept_per_row(op)) continue;
      if (is_padding(op)) {  // computed once up front: inlined, its bounds test would run per window element
        schedule_padding(op.name);
        continue;
      }
      apply(compute_inline_step(op.name));
    }
    bool out_is_reduction = out.reduce != ReduceKind::None;
    if (out_is_reduction) {
      schedule_reduction_output(out);
    } else if (!(one_row_of_column_reductions(out) && schedule_column_chunks(out.name))) {
      std::vector<std::string> loops = state().stage(out.name).leaf_names();
      if (loops.size() > 2) {  // rows of higher rank: fuse the row axes
        std::vector<std::string> rows(loops.begin(), loops.end() - 1);
        apply(fuse_step(out.name, rows));
      }
      std::string col = state().stage(out.name).leaf_names().back();
      if (apply(split_step(out.name, col, {lanes_}))) apply(annotate_step(out.name, col + ".1", Annotation::Vectorize));
      apply(annotate_step(out.name, state().stage(out.name).leaf_names()[0], Annotation::Parallel));
    }
    std::string out_row = state().stage(out.name).leaf_names()[0];
    // Producers, consumers first, each computed per row of the output.
    for (size_t i = dag_.ops().size(); i-- > 0;) {
      const Operation& op = dag_.ops()[i];
      if (op.is_placeholder || op.name == out.name || state().stage(op.name).loc == ComputeLoc::Inline) continue;
      if (is_padding(op)) continue;
      if (op.reduce != ReduceKind::None) vectorize_reduction(op.name);
      else if (op.shape.size() >= 2) {
        std::string col = state().stage(op.name).leaf_names().back();
        if (apply(split_step(op.name, col, {lanes_}))) apply(annotate_step(op.name, col + ".1", Annotation::Vectorize));
      }
      if (!apply(compute_at_step(op.name, out.name, out_row))) {
        std::vector<std::string> consumers = state().effective_consumers(op.name);
        if (consumers.size() == 1) apply(compute_at_step(op.name, consumers[0], state().stage(consumers[0]).leaf_names()[0]));
      }
    }
    for (const Operation& op : dag_.ops())
      if (op.is_placeholder) prefetch_rows_ahead(b_, op, out.name, kPrefetchAheadBytes, kPrefetchMinBytes);
  }

  // One output row of dot products: a matrix-vector product (the classifier of a CNN at batch 1). Its
  // rows have nothing to share out; its columns do. Only where working per chunk of columns repeats
  // nothing: one reduction, with one value per column, read by the output at that column alone, and
  // no expensive stage that would be computed whole for every chunk.
  bool one_row_of_column_reductions(const Operation& out) const {
    if (out.axes.empty() || out.reduce != ReduceKind::None) return false;
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < out.axes.size(); ++i) rows *= out.axes[i].extent;
    const Axis& col = out.axes.back();
    if (rows != 1 || col.extent < 2 * kColumnChunkVectors * lanes_) return false;
    const Operation* reduction = nullptr;
    for (const Operation& op : dag_.ops()) {
      if (op.is_placeholder || op.name == out.name) continue;
      if (op.reduce == ReduceKind::None) {
        if (kept_per_row(op)) return false;
        continue;
      }
      if (reduction || op.axes.size() != 1 || op.axes[0].extent != col.extent) return false;
      reduction = &op;
    }
    if (!reduction) return false;
    const std::vector<std::string> readers = dag_.consumers(reduction->name);
    return readers.size() == 1 && readers[0] == out.name && reads_only_at(out.body, reduction->name, col.name);
  }

  // Whether every read of `tensor` in e is at [var].
  static bool reads_only_at(const Expr& e, const std::string& tensor, const std::string& var) {
    if (e->op == ExprOp::TensorRead && e->name == tensor)
      return e->args.size() == 1 && e->args[0]->op == ExprOp::Var && e->args[0]->name == var;
    for (const Expr& a : e->args)
      if (!reads_only_at(a, tensor, var)) return false;
    return true;
  }

  // [rows (of one) @ chunks (parallel), vectors of the chunk, lanes (vectorized)]; the producers,
  // computed per chunk, reduce only that chunk's columns. False (nothing applied) when the split is
  // refused.
  bool schedule_column_chunks(const std::string& name) {
    std::vector<std::string> loops = state().stage(name).leaf_names();
    const std::string col = loops.back();
    if (!apply(split_step(name, col, {kColumnChunkVectors, lanes_}))) return false;
    apply(annotate_step(name, col + ".2", Annotation::Vectorize));
    std::vector<std::string> outer(loops.begin(), loops.end() - 1);
    outer.push_back(col + ".0");
    parallel_rows(name, outer);
    return true;
  }

  // An elementwise stage a row reduction computes once per row rather than inlining: an expensive
  // one read twice (softmax's exp).
  bool kept_per_row(const Operation& op) const {
    return is_expensive(op.body) && dag_.consumers(op.name).size() > 1;
  }

  bool is_padding(const Operation& op) const { return pads_reduction_input(dag_, op); }

  // An output that is itself a reduction: its output axes fused into one parallel loop (a batch of 1
  // leaves the first axis with nothing to share out). A long single reduction (a row sum) is
  // vectorized along the row through rfactor; a short window (a pool, a depthwise filter) runs inside
  // a vector of adjacent outputs instead. Where the output's rows are a vector long or more, the
  // vector is a row's adjacent outputs, [other axes (parallel), row / lanes, window..., lanes], whose
  // reads advance by the window's stride; else [outputs / lanes (parallel), window..., lanes], each
  // lane's read found by division (a max pooling of ResNet-50 ran 3.7 ms so on two cores).
  void schedule_reduction_output(const Operation& out) {
    const bool long_row = out.reduce_axes.size() == 1 && out.reduce_axes[0].extent >= 2 * lanes_;
    std::vector<std::string> spatial;
    for (const Axis& a : out.axes) spatial.push_back(a.name);
    if (!long_row && spatial.size() > 1 && extent_of(out.name, spatial.back()) >= lanes_ &&
        apply(split_step(out.name, spatial.back(), {lanes_}))) {
      const std::string row = spatial.back();
      std::vector<std::string> order(spatial.begin(), spatial.end() - 1);
      order.push_back(row + ".0");
      for (const Axis& r : out.reduce_axes) order.push_back(r.name);
      order.push_back(row + ".1");
      apply(reorder_step(out.name, order));
      apply(annotate_step(out.name, row + ".1", Annotation::Vectorize));
      parallel_rows(out.name, {spatial.begin(), spatial.end() - 1});
      return;
    }
    std::string fused = spatial[0];
    if (spatial.size() > 1 && apply(fuse_step(out.name, spatial))) fused = state().stage(out.name).leaf_names()[0];
    if (long_row) {
      vectorize_reduction(out.name);
      apply(annotate_step(out.name, state().stage(out.name).leaf_names()[0], Annotation::Parallel));
      return;
    }
    if (extent_of(out.name, fused) >= 2 * lanes_ && apply(split_step(out.name, fused, {lanes_}))) {
      std::vector<std::string> order{fused + ".0"};
      for (const Axis& r : out.reduce_axes) order.push_back(r.name);
      order.push_back(fused + ".1");
      if (apply(reorder_step(out.name, order))) apply(annotate_step(out.name, fused + ".1", Annotation::Vectorize));
      apply(annotate_step(out.name, fused + ".0", Annotation::Parallel));
      return;
    }
    apply(annotate_step(out.name, fused, Annotation::Parallel));
  }

  // reduce over k -> kReduceChains x `lanes` partial results when the row is long enough.
  void vectorize_reduction(const std::string& name) {
    const Operation& op = state().op(name);
    if (op.reduce_axes.size() != 1 || op.reduce_axes[0].extent < 2 * lanes_) return;
    int64_t chains = op.reduce_axes[0].extent >= 8 * kReduceChains * lanes_ ? kReduceChains : 1;
    rfactor_into_vectors(b_, name, chains, lanes_);
  }

  void schedule_contraction(const Operation& contraction, const Operation& out) {
    std::string compute = contraction.name;
    if (contraction.name == out.name) {
      apply(cache_write_step(out.name, MemScope::Local));
      compute = cache_stage_name(out.name, MemScope::Local);
    }
    inline_all_but_reduction(contraction.name, out.name);
    const Operation c = state().op(compute);  // a copy: every applied step replaces the state
    size_t rank = c.axes.size();
    auto [u, v, w] = contraction_axes(c);
    // A vector axis of one vector (a block of output channels) leaves the register tile one vector
    // wide: it then takes more rows, and rows that divide the output (a bounds test on every
    // accumulation otherwise), so that enough accumulators hide the FMA latency. Where the weights
    // have blocks of output channels (w) in pairs, the tile takes two: each input value broadcast
    // then feeds two FMAs, and the loads per FMA fall below the two per cycle a core issues
    // (oneDNN's direct convolutions tile so). Accumulators, the weight vectors and one broadcast
    // stay within the vector registers (32 with AVX-512's 16 lanes, else 16).
    const std::vector<std::string> out_axes = state().stage(out.name).leaf_names();
    const bool one_vector = extent_of(out.name, out_axes[v]) <= lanes_;
    if (u >= 0 && w < 0 && !one_vector && !has_window(c) && c.reduce_axes.size() == 1) {
      schedule_matrix_product(c, compute, out, u, v);
      return;
    }
    int64_t tile_rows = kTileRows, reg_rows = kRegRows, reg_blocks = 1;
    if (one_vector && u >= 0) {
      const int64_t registers = lanes_ >= 16 ? 32 : 16;
      const int64_t blocks = w >= 0 ? extent_of(out.name, out_axes[w]) : 1;
      tile_rows = dividing_tile(extent_of(out.name, out_axes[u]), kTileRows);
      const bool window = has_window(c), image = reads_unblocked_input(c, v);
      if (registers >= 32) {
        std::tie(reg_rows, reg_blocks) = wide_register_tile(tile_rows, blocks, registers, window, image);
      } else {
        int64_t reduction = 1;
        for (const Axis& r : c.reduce_axes) reduction *= r.extent;
        std::tie(reg_rows, reg_blocks) = small_register_tile(tile_rows, blocks, registers, window, image, reduction);
      }
    }
    // The output tile: u by tile_rows, v by kTileCols, outer loops fused and parallel.
    const std::string ou = u >= 0 ? out_axes[u] : "", ov = out_axes[v];
    std::vector<std::string> outer, inner;
    for (size_t a = 0; a < rank; ++a) {
      const std::string& ax = out_axes[a];
      const int i = static_cast<int>(a);
      int64_t tile = i == v ? kTileCols : i == u ? tile_rows : i == w && reg_blocks > 1 ? reg_blocks : 0;
      if (tile && extent_of(out.name, ax) > tile && apply(split_step(out.name, ax, {tile}))) {
        outer.push_back(ax + ".0");
        inner.push_back(ax + ".1");
      } else if (tile) {
        inner.push_back(ax);
      } else {
        outer.push_back(ax);
      }
    }
    // Blocks of output channels (w) in the tile: when the weights are the smaller operand, the
    // parallel tasks take the output channels innermost, so consecutive tasks share their input
    // rows and the weights stay in cache across rows (a stride-2 convolution of ResNet-50 ran 6-12%
    // faster so on two cores); else the channels go outermost and each core keeps its own weights.
    if (w >= 0 && reg_blocks > 1 && weights_are_smaller(c, v)) {
      auto it = std::find_if(outer.begin(), outer.end(), [&](const std::string& loop) {
        return loop == out_axes[w] || loop == out_axes[w] + ".0";
      });
      if (it != outer.end()) std::rotate(it, it + 1, outer.end());
    }
    const std::string tile_loop = parallel_tiles(out.name, outer, inner);

    // With blocks in the register tile the contraction is computed per register tile, inside the
    // output tile's loop over groups of `reg_rows` rows: its accumulators are then indexed by
    // constants once the tile is unrolled, and stay in registers (computed per output tile, LLVM
    // kept 14 of them in memory for a 14x14 output, a load and a store per FMA).
    std::string at = tile_loop;
    int64_t row_tiles = 1;  // register tiles along a row of the output tile
    if (reg_blocks > 1) {
      std::string rows;
      for (const std::string& loop : inner)
        if (loop == ou || loop == ou + ".1") rows = loop;
      std::vector<std::string> leaves = state().stage(out.name).leaf_names();
      if (!rows.empty() && extent_of(out.name, rows) > reg_rows && apply(split_step(out.name, rows, {reg_rows}))) {
        std::vector<std::string> tiled;
        for (const std::string& loop : state().stage(out.name).leaf_names())
          if (loop != rows + ".0") tiled.push_back(loop);
        auto first_inner = std::find(tiled.begin(), tiled.end(), inner.front());
        tiled.insert(first_inner, rows + ".0");
        if (apply(reorder_step(out.name, tiled))) {
          at = rows + ".0";
          row_tiles = extent_of(out.name, at);
        }
      }
    }
    // A register tile's weights over its whole reduction past the L1 cache (a 3x3 convolution of 128
    // channels: 144 KiB for two blocks of output channels) stream from L2 once per register tile.
    // The contraction is then computed per output tile instead, its first reduction axis in chunks
    // whose weights fit in L1, outside the register tiles: each chunk's weights serve every register
    // tile of the row from L1, the partial sums kept in the tile's local buffer (a stride-2 3x3
    // convolution of ResNet-50 ran 6% faster so on two cores).
    std::string chunked;  // the first reduction axis of the contraction, when split into chunks
    if (reg_blocks > 1 && at != tile_loop && !tile_loop.empty()) {
      const Stage& before = state().stage(compute);
      const int64_t chunk = l1_reduce_chunk(c, v, reg_blocks);
      const std::string first = before.num_roots > before.num_spatial_roots
                                    ? before.vars[static_cast<size_t>(before.num_spatial_roots)].name
                                    : "";
      if (chunk > 0 && !first.empty() && apply(split_step(compute, first, {chunk}))) {
        chunked = first;
        at = tile_loop;
      }
    }
    // The contraction per tile: [others, u.0, v.0, reduce..., u.1 (unrolled), v.1 (unrolled), v.2 (vector)],
    // or with a reduction chunk [others, r0.0, u.0, v.0, r0.1, reduce..., u.1, v.1, v.2].
    if (!at.empty()) apply(compute_at_step(compute, out.name, at));
    const Stage& cs = state().stage(compute);
    std::vector<std::string> spatial_outer, reduce, reg;
    std::string cv = cs.vars[v].name, cu = u >= 0 ? cs.vars[u].name : "";
    const std::string cw = reg_blocks > 1 ? cs.vars[w].name : "";
    for (int a = 0; a < cs.num_roots; ++a) {
      const std::string& name = cs.vars[a].name;
      if (a >= cs.num_spatial_roots) reduce.push_back(name);
      else if (name != cv && name != cu && name != cw) spatial_outer.push_back(name);
    }
    if (!cw.empty()) {
      if (apply(split_step(compute, cw, {reg_blocks}))) {
        spatial_outer.push_back(cw + ".0");
        reg.push_back(cw + ".1");
      } else {
        spatial_outer.push_back(cw);
      }
    }
    bool rows_split = false;
    if (!cu.empty() && apply(split_step(compute, cu, {reg_rows}))) {
      rows_split = true;
      spatial_outer.push_back(cu + ".0");
      // The smaller of rows and blocks inside the other, so that fewer operand vectors stay live
      // (the sketches' order_register_tile).
      reg.insert(reg_rows >= reg_blocks ? reg.begin() : reg.end(), cu + ".1");
    }
    if (apply(split_step(compute, cv, {kRegVectors, lanes_}))) {
      spatial_outer.push_back(cv + ".0");
      reg.push_back(cv + ".1");
      reg.push_back(cv + ".2");
    } else {
      reg.push_back(cv);
    }
    std::vector<std::string> corder = spatial_outer;
    if (!chunked.empty() && !reduce.empty() && reduce[0] == chunked) {
      // The register tiles' outer loops (u.0, v.0) go inside the chunk loop.
      auto tiles = std::stable_partition(corder.begin(), corder.end(), [&](const std::string& loop) {
        return loop != cu + ".0" && loop != cv + ".0";
      });
      corder.insert(tiles, reduce[0] + ".0");
      reduce[0] += ".1";
    }
    corder.insert(corder.end(), reduce.begin(), reduce.end());
    corder.insert(corder.end(), reg.begin(), reg.end());
    apply(reorder_step(compute, corder));
    // A few register tiles per row under a reduction chunk are unrolled: LLVM rotates a loop of two
    // iterations into one that selects between their buffers, and then keeps 13 of the 14
    // accumulators in memory (a 3x3 convolution of 256 channels at 14x14 ran 2.1x slower). A loop
    // of four becomes one of two once the loop partitioning peels the tiles at the input's border
    // off (128 channels at 28x28 ran 1.9x slower so); unrolled, each tile's loops stand on their own.
    if (!chunked.empty() && rows_split && row_tiles <= 4)
      apply(annotate_step(compute, cu + ".0", Annotation::Unroll));
    for (size_t r = 0; r + 1 < reg.size(); ++r) apply(annotate_step(compute, reg[r], Annotation::Unroll));
    apply(annotate_step(compute, reg.back(), Annotation::Vectorize));
    // With 16 vector registers a wide window's column loop (a 7x7 stem's) is unrolled around the
    // register tile: its seven steps of eight FMAs each ran 7% faster so on two Zen 3 cores (a 3x3
    // window's three: no gain).
    if (lanes_ < 16 && has_window(c) && !reduce.empty()) {
      const int64_t columns = extent_of(compute, reduce.back());
      if (columns >= kUnrolledWindow && columns <= kMostUnrolledWindow)
        apply(annotate_step(compute, reduce.back(), Annotation::Unroll));
    }
  }

  // The output's tile loops `outer` fused into one parallel loop ahead of the loops within a tile
  // (`inner`), the innermost of them in vectors; returns the parallel loop ("" when there is none).
  std::string parallel_tiles(const std::string& out, const std::vector<std::string>& outer,
                             const std::vector<std::string>& inner) {
    std::vector<std::string> order = outer;
    order.insert(order.end(), inner.begin(), inner.end());
    apply(reorder_step(out, order));
    std::string tile_loop = outer.empty() ? "" : outer[0];
    if (outer.size() > 1 && apply(fuse_step(out, outer))) tile_loop = state().stage(out).leaf_names()[0];
    if (!tile_loop.empty()) apply(annotate_step(out, tile_loop, Annotation::Parallel));
    std::string vec = inner.back();
    if (extent_of(out, vec) > lanes_ && apply(split_step(out, vec, {lanes_}))) vec += ".1";
    apply(annotate_step(out, vec, Annotation::Vectorize));
    return tile_loop;
  }

  // A matrix product (matmul, dense, batch_matmul: one reduction, no window, vectors along the
  // output's columns), blocked as BLAS blocks it. The output in tiles of up to 128 rows by 64
  // columns, fused with the batch axes into one parallel loop (smaller row tiles where that leaves
  // fewer than kMinProductTasks tasks); per tile the reduction in chunks of up to kReduceChunk, each
  // chunk's columns of the operand read along the vector (matmul's B[k, j]) packed into a
  // contiguous local copy that every register tile of the tile's rows then reads from L1; the
  // register tile (8 rows with 32 vector registers, else 4) by 2 vectors innermost, unrolled, its
  // accumulators in registers across the chunk. Unpacked, B's rows are N floats apart, and at N a
  // multiple of 1024 every row of a 16-float strip falls in the same L1 set; unchunked, a register
  // tile's strip of B over K = 3072 is 384 KiB. Row tiles divide the rows where a divisor of at
  // least half the tile does (a bounds test on the rows of a tile fused into the parallel loop
  // stays in its innermost loop and keeps the accumulators out of registers). Against OpenBLAS in
  // one process on two Zen 4 cores, 1024 x 3072 x 768 went from 0.56x to 0.93x and 1024 x 768 x 3072
  // from 0.70x to 0.98x of its speed (before: the output tiled 32 x 64, the whole reduction per
  // 4 x 2-vector register tile, nothing packed; experiments/results/cpu_matmul).
  void schedule_matrix_product(const Operation& c, const std::string& compute, const Operation& out, int u, int v) {
    std::vector<std::string> out_axes = state().stage(out.name).leaf_names();
    // Rows that fold: a product of a weight shared by every leading axis (a dense layer over
    // activations [sequence, batch, features]) takes the leading axes and its rows as one axis of
    // rows, so that a tile's packed weights serve all of its rows (over 8 rows, a batch of 8 taken
    // as rows, the packing cost more than it saved).
    int64_t inner_rows = extent_of(out.name, out_axes[static_cast<size_t>(u)]);
    if (u == v - 1 && u > 0 && folds_rows(c, u, v) &&
        apply(fuse_step(out.name, std::vector<std::string>(out_axes.begin(), out_axes.begin() + u + 1)))) {
      out_axes = state().stage(out.name).leaf_names();
      v -= u;
      u = 0;
    } else {
      inner_rows = 1;
    }
    const std::string rows = out_axes[static_cast<size_t>(u)], cols = out_axes[static_cast<size_t>(v)];
    const int64_t m = extent_of(out.name, rows), n = extent_of(out.name, cols);
    int64_t batch = 1;
    for (size_t a = 0; a < out_axes.size(); ++a)
      if (static_cast<int>(a) != u && static_cast<int>(a) != v) batch *= extent_of(out.name, out_axes[a]);
    const int64_t most_reg_rows = lanes_ >= 16 ? 2 * kRegRows : kRegRows;
    const int64_t col_tiles = (n + kTileCols - 1) / kTileCols;
    // Folded rows: a tile of whole rows of the leading axes, or a divisor of them.
    const int64_t align = inner_rows > 1 && inner_rows <= kProductTileRows ? inner_rows : 1;
    int64_t tile_rows = row_tile(m, kProductTileRows, most_reg_rows, align);
    for (int64_t most = kProductTileRows / 2; most >= kTileRows / 2; most /= 2) {
      if (batch * ((m + tile_rows - 1) / tile_rows) * col_tiles >= kMinProductTasks) break;
      tile_rows = row_tile(m, most, most_reg_rows, align);
    }

    // The output: [batch..., rows.0, cols.0 (fused, parallel), rows.1, cols.1 (vectors)].
    std::vector<std::string> outer, inner;
    for (size_t a = 0; a < out_axes.size(); ++a) {
      const std::string& ax = out_axes[a];
      const int64_t tile = ax == rows ? tile_rows : ax == cols ? kTileCols : 0;
      if (tile && extent_of(out.name, ax) > tile && apply(split_step(out.name, ax, {tile}))) {
        outer.push_back(ax + ".0");
        inner.push_back(ax + ".1");
      } else {
        (tile ? inner : outer).push_back(ax);
      }
    }
    const std::string tile_loop = parallel_tiles(out.name, outer, inner);
    if (!tile_loop.empty()) apply(compute_at_step(compute, out.name, tile_loop));

    // The product per tile: [k.0, the other axes' loops, i.0, j.0, k.1, i.1, j.1, j.2 (vector)],
    // where i is the product's own rows (within a folded tile, the leading axes' loops are outside
    // them).
    const Stage& cs = state().stage(compute);
    const size_t cu = static_cast<size_t>(c.axes.size()) - 2, cv = cu + 1;
    const std::string ci = cs.vars[cu].name, cj = cs.vars[cv].name;
    const std::string k = cs.vars[static_cast<size_t>(cs.num_spatial_roots)].name;
    const int64_t reg_rows = dividing_tile(std::min(tile_rows, c.axes[cu].extent), most_reg_rows);
    std::vector<std::string> others;
    for (size_t a = 0; a < cu; ++a) others.push_back(cs.vars[a].name);
    const int64_t reduction = c.reduce_axes[0].extent;
    std::string chunk_loop, k_inner = k;
    if (reduction > 2 * kReduceChunk && apply(split_step(compute, k, {dividing_tile(reduction, kReduceChunk)}))) {
      chunk_loop = k + ".0";
      k_inner = k + ".1";
    }
    std::vector<std::string> corder, reg;
    if (!chunk_loop.empty()) corder.push_back(chunk_loop);
    corder.insert(corder.end(), others.begin(), others.end());
    if (apply(split_step(compute, ci, {reg_rows}))) {
      corder.push_back(ci + ".0");
      reg.push_back(ci + ".1");
    } else {
      reg.push_back(ci);
    }
    if (apply(split_step(compute, cj, {kRegVectors, lanes_}))) {
      corder.push_back(cj + ".0");
      reg.push_back(cj + ".1");
      reg.push_back(cj + ".2");
    } else {
      reg.push_back(cj);
    }
    corder.push_back(k_inner);
    corder.insert(corder.end(), reg.begin(), reg.end());
    apply(reorder_step(compute, corder));
    for (size_t r = 0; r + 1 < reg.size(); ++r) apply(annotate_step(compute, reg[r], Annotation::Unroll));
    apply(annotate_step(compute, reg.back(), Annotation::Vectorize));

    // The operand read along the vector, packed per chunk (or per tile) where it misses the rows.
    for (const Expr& read : tensor_reads(c.body)) {
      if (!read_uses_axis(read, c.axes[cv].name) || read_uses_axis(read, c.axes[cu].name) ||
          !dag_.op(read->name).is_placeholder)
        continue;
      const std::string packed = cache_stage_name(read->name, MemScope::Local);
      if (!apply(cache_read_step(read->name, MemScope::Local, {compute}))) break;
      if (!chunk_loop.empty()) apply(compute_at_step(packed, compute, chunk_loop));
      else if (!tile_loop.empty()) apply(compute_at_step(packed, out.name, tile_loop));
      const std::string last = state().stage(packed).leaf_names().back();
      if (extent_of(packed, last) > lanes_ && apply(split_step(packed, last, {lanes_})))
        apply(annotate_step(packed, last + ".1", Annotation::Vectorize));
      break;
    }
  }

  // Whether the leading axes of matrix product `c` (rows `u`, columns `v`) fold into its rows: the
  // operand read along the columns uses none of them, the other uses them all.
  static bool folds_rows(const Operation& c, int u, int v) {
    for (const Expr& read : tensor_reads(c.body)) {
      const bool along_columns = read_uses_axis(read, c.axes[static_cast<size_t>(v)].name);
      for (int a = 0; a < u; ++a)
        if (read_uses_axis(read, c.axes[static_cast<size_t>(a)].name) == along_columns) return false;
    }
    return true;
  }

  // The row tile of a matrix product: all `m` rows up to `most`, else a divisor of `m` of at least
  // half of `most` (a multiple of `reg_rows` first), else `most`; with `align` > 1, a multiple of
  // `align` or a divisor of it.
  static int64_t row_tile(int64_t m, int64_t most, int64_t reg_rows, int64_t align) {
    if (m <= most) return m;
    auto aligned = [&](int64_t t) { return align <= 1 || t % align == 0 || align % t == 0; };
    for (int64_t t = most; t * 2 >= most; --t)
      if (m % t == 0 && t % reg_rows == 0 && aligned(t)) return t;
    for (int64_t t = most; t * 2 >= most; --t)
      if (m % t == 0 && aligned(t)) return t;
    if (aligned(most)) return most;
    return align <= most ? most / align * align : dividing_tile(align, most);
  }

  // Whether contraction `c` reads its input with channels not in blocks (a model's first
  // convolution, over an image's three channels in NCHW) while its output is blocked.
  bool reads_unblocked_input(const Operation& c, int v) const {
    for (const Expr& read : tensor_reads(c.body))
      if (!read_uses_axis(read, c.axes[static_cast<size_t>(v)].name) && dag_.op(read->name).shape.size() < c.axes.size())
        return true;
    return false;
  }

  // The register tile {rows, blocks of output channels} of a contraction whose vector is one block,
  // on a machine of 32 vector registers or more (AVX-512), for rows of `rows` outputs (a row tile)
  // and `blocks` blocks: a window over blocked input (`window`, not an `image` in NCHW) whose rows go
  // in fours takes 4 by 4, half a load per FMA instead of 7 by 2's 0.64 (ResNet-50's 3x3
  // convolutions at 56x56 ran 5-16% faster so on two Zen 4 cores, 128 channels at 28x28 the same;
  // pointwise convolutions and the stem over an image gained nothing); else blocks in pairs (or
  // threes: 24 or 48 channels in blocks of 8), and as many rows up to 8 as leave the accumulators,
  // the weight vectors and one broadcast within the registers, dividing the row where one does.
  static std::pair<int64_t, int64_t> wide_register_tile(int64_t rows, int64_t blocks, int64_t registers,
                                                        bool window, bool image) {
    int64_t reg_blocks = 1;
    if (window && !image && blocks % 4 == 0 && rows % 4 == 0) reg_blocks = 4;
    else if (blocks % 2 == 0) reg_blocks = 2;
    else if (blocks % 3 == 0) reg_blocks = 3;
    const int64_t most_rows = std::min(kRegRows * kRegVectors, (registers - reg_blocks - 1) / reg_blocks);
    return {dividing_tile(rows, most_rows), reg_blocks};
  }

  // The register tile {rows, blocks of output channels} of a contraction whose vector is one block,
  // on a machine of `registers` vector registers (16: AVX2), for rows of `rows` outputs and `blocks`
  // blocks. A tile of r rows by b blocks keeps r * b accumulators, min(r, b) operand vectors and a
  // broadcast live (the smaller group inside: order_register_tile's rule) and loads r + b values
  // for r * b FMAs. Two FMAs a cycle of four cycles' latency need 8 accumulators; two loads a cycle
  // feed them while there are fewer loads than FMAs; one register is left spare (a tile of 4 by 3
  // that filled all 16 ran 1.4-1.8x slower than 4 by 2). So, measured on two Zen 3 cores:
  //  0. without a window (a pointwise convolution), rows of 4 tiles or more, blocks in pairs and a
  //     reduction of 64 channels or more: 6 by 2, 12 accumulators, the row's last tile tested (the
  //     lowering peels it off; a window's bounds tests are not): 1.07-1.26x faster than 4 by 2 on
  //     ResNet-50's pointwise convolutions at 28x28 and 56x56 (slower on rows of 14 and 7, and with
  //     16 to 32 input channels, whose short reductions the tested tile's code does not repay);
  //  1. r dividing the row and b the blocks (a tile past the end tests bounds on every
  //     accumulation: 6 by 2 on rows of 14 ran 1.3-2x slower than 2 by 4), b up to 4, the fewest
  //     loads per FMA, then the most rows (4 by 2 ran a 3x3 convolution of 64 channels at 56x56 7%
  //     faster than 2 by 4) or, for an input in NCHW (`image`: each broadcast a scalar of its own
  //     strided image row), the most blocks (2 by 4 ran ResNet-50's 7x7 stem 6% faster);
  //  2. else, without a window (a pointwise convolution, whose row tile's test is peeled off with
  //     the last tile), 2 by 4 with the row's last tile tested: 1.2-1.5x faster than 7 by 1 on
  //     rows of 7 (2048 to 512 channels; 1024 to 2048 at stride 2);
  //     else, with blocks in an odd number, r by 2 with the last blocks' tile tested (its test is
  //     outside the reduction): 144 to 24 channels at 56x56 ran 1.5x faster so than 8 by 1;
  //  3. else (rows of 7) the most rows from 4 to 8 that divide the row, one block: 7 by 1 ran a 3x3
  //     convolution of 512 channels at 7x7 2.5x faster than 6 by 2;
  //  4. else (a row of 13 or 61: no such divisor) 6 by 2, or 8 by 1, the last tile of the row
  //     tested (the lowering peels it off).
  static std::pair<int64_t, int64_t> small_register_tile(int64_t rows, int64_t blocks, int64_t registers,
                                                         bool window, bool image, int64_t reduction) {
    const int64_t pair_rows = (registers - 4) / 2;  // r by 2 with a spare register
    if (!window && rows >= 4 * pair_rows && blocks % 2 == 0 && reduction >= 64) return {pair_rows, 2};
    std::pair<int64_t, int64_t> best{0, 0};
    double best_loads = 1.0;
    for (int64_t i = 1; i <= rows; ++i) {
      const int64_t r = image ? i : rows + 1 - i;  // candidates met first win ties
      for (int64_t b = 1; b <= std::min<int64_t>(blocks, 4); ++b) {
        const int64_t acc = r * b;
        if (rows % r || blocks % b || acc < 8 || acc + std::min(r, b) + 2 > registers) continue;
        const double loads = static_cast<double>(r + b) / static_cast<double>(acc);
        if (loads < best_loads - 1e-9) {
          best = {r, b};
          best_loads = loads;
        }
      }
    }
    if (best.first > 0) return best;
    if (!window && rows > 2 && blocks % 4 == 0) return {2, 4};
    if (blocks >= 2)
      for (int64_t r = pair_rows - 1; r >= 4; --r)
        if (rows % r == 0) return {r, 2};
    for (int64_t r = std::min<int64_t>(rows, kRegRows * kRegVectors); r >= 4; --r)
      if (rows % r == 0) return {r, 1};
    if (rows < 4) return {rows, std::min<int64_t>(blocks, 2)};
    return blocks >= 2 ? std::pair<int64_t, int64_t>{pair_rows, 2} : std::pair<int64_t, int64_t>{8, 1};
  }

  // Whether contraction `c` reduces over a window besides its channels (a 3x3 convolution, not a
  // pointwise one).
  static bool has_window(const Operation& c) {
    return std::count_if(c.reduce_axes.begin(), c.reduce_axes.end(), [](const Axis& a) { return a.extent > 1; }) >= 2;
  }

  // When a register tile of `reg_blocks` vectors of output channels of a convolution reads more
  // weights over its reduction than the L1 cache holds: the chunk of the first reduction axis (a
  // divisor of it) whose weights fill at most half of L1. 0 when the weights fit, or `c` is not such
  // a contraction. Pointwise convolutions (no window) keep their tiles with 32 vector registers:
  // chunked, they gained on some shapes and lost 8% on others (512 to 256 channels at 28x28) on two
  // cores. With 16 their register tiles are narrower, more of them a row each read the weights, and
  // chunks ran 1024 to 256 or 512 channels at 14x14 8-10% and 512 to 1024 at stride 2 27% faster on
  // two Zen 3 cores, and no shape slower.
  int64_t l1_reduce_chunk(const Operation& c, int v, int64_t reg_blocks) const {
    if (c.reduce_axes.empty() || (!has_window(c) && lanes_ >= 16)) return 0;
    int64_t weight_bytes = 0;
    for (const Expr& read : tensor_reads(c.body))
      if (read_uses_axis(read, c.axes[static_cast<size_t>(v)].name))
        weight_bytes = std::max(weight_bytes, dtype_bytes(dag_.op(read->name).dtype));
    if (weight_bytes == 0) return 0;
    // Bytes per step of the first reduction axis: a block of output channels is a vector or, with
    // blocks of 8 on 16 lanes, half of one.
    int64_t per_unit = reg_blocks * std::min(lanes_, c.axes[static_cast<size_t>(v)].extent) * weight_bytes;
    for (size_t r = 1; r < c.reduce_axes.size(); ++r) per_unit *= c.reduce_axes[r].extent;
    const int64_t first = c.reduce_axes[0].extent;
    if (per_unit * first <= kL1Bytes) return 0;
    for (int64_t chunk = std::min(first - 1, kL1Bytes / 2 / per_unit); chunk >= 1; --chunk)
      if (first % chunk == 0) return chunk;
    return 0;
  }

  // Whether the tensor read along the vector axis `v` of contraction `c` (a convolution's weights)
  // has no more elements than the other operand (its input).
  bool weights_are_smaller(const Operation& c, int v) const {
    int64_t weights = 0, other = 0;
    for (const Expr& read : tensor_reads(c.body)) {
      int64_t elements = 1;
      for (int64_t e : dag_.op(read->name).shape) elements *= e;
      (read_uses_axis(read, c.axes[static_cast<size_t>(v)].name) ? weights : other) += elements;
    }
    return weights <= other;
  }

  // The largest factor of `extent` up to `most` when it is at least half of `most` (a tile that
  // divides the axis needs no bounds test), else `most`.
  static int64_t dividing_tile(int64_t extent, int64_t most) {
    if (extent <= most) return extent;
    for (int64_t t = most; t * 2 >= most; --t)
      if (extent % t == 0) return t;
    return most;
  }

  // Every stage but the reduction (a contraction or a blocked window) and the output inlined.
  void inline_all_but_reduction(const std::string& reduction, const std::string& out) {
    for (const Operation& op : dag_.ops()) {
      if (op.is_placeholder || op.name == out || op.name == reduction || op.reduce != ReduceKind::None) continue;
      // Padding is inlined as a bounds test on each read: the lowering's loop partitioning peels
      // the window's first row and column off and decides the test there once per tile, so the
      // inner loops read the input guard-free. Computed up front instead, the padded copy of the
      // input costs a pass over memory (a stride-2 3x3 convolution of 256 channels at 28x28 ran
      // 1.35x slower so on two cores).
      apply(compute_inline_step(op.name));
    }
  }

  const ComputeDAG& dag_;
  TraceBuilder b_;
  int64_t lanes_;
};

}  // namespace

Trace default_schedule(const ComputeDAG& dag, const CpuTargetSpec& target) {
  return DefaultScheduler(dag, target).run();
}

}  // namespace tessel
