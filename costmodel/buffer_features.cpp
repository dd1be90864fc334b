// The per-buffer blocks of a feature row: for the buffers the row touches most, how it accesses
// them (read / write, bytes and cache lines, unique and in total), where it reuses their data, the
// stride of its innermost moving loop, their memory scope and, on the GPU, one warp's sectors,
// useful bytes per sector byte and shared-memory bank ways.
#include <algorithm>
#include <cmath>

#include "costmodel/feature_row.h"

namespace tessel::feature {

namespace {

struct BufferStats {
  const std::string* name;
  bool read = false, write = false;
  double bytes = 0, unique_elems = 0, lines = 0, unique_lines = 0;
  double lo = 0, hi = 0;
  int elem_bytes = 4;
  int occurrences = 0;
  const Access* first = nullptr;
};

}  // namespace

// One warp executing access `a` once: the block's first 32 threads (threadIdx.x fastest, in the
// kernel's launch shape), each at its thread-loop values and every other loop at 0; a thread past
// the row's own (guarded) loop extent is idle. The index's constant counts, block offsets do not
// (assumed aligned). Sectors are 32-byte global-memory transactions. Bank ways: the most distinct
// 4-byte words one of the 32 banks serves in one request, per 128 bytes the request asks for; a
// contiguous float2/float4 access is one request (as the CUDA printer emits it), any other vector
// one request per lane.
RowBuilder::WarpAccess RowBuilder::warp_access(const Access& a) const {
  int axis_loop[3] = {-1, -1, -1};
  for (int i = 0; i < nloops_; ++i) {
    const StmtNode* l = g_.loops[i].node;
    if (l->for_kind != ForKind::ThreadBound || !starts_with(l->thread_tag, "threadIdx.")) continue;
    if (tag_axis(l->thread_tag) >= 0) axis_loop[tag_axis(l->thread_tag)] = i;
  }
  WarpAccess w;
  if (axis_loop[0] < 0 && axis_loop[1] < 0 && axis_loop[2] < 0) return w;
  double shape[3];
  for (int axis = 0; axis < 3; ++axis) shape[axis] = std::max(kernel_.block_shape[axis], 1.0);
  const int threads = static_cast<int>(std::min(32.0, shape[0] * shape[1] * shape[2]));
  const double lane_coef = a.index.coef[nloops_];
  const bool wide = lane_coef == 1 && (a.lanes == 2 || a.lanes == 4);
  std::vector<int64_t> elements, sectors;
  std::vector<std::vector<int64_t>> requests(wide ? 1 : static_cast<size_t>(a.lanes));  // words
  for (int t = 0; t < threads; ++t) {
    const double id[3] = {std::fmod(t, shape[0]), std::fmod(std::floor(t / shape[0]), shape[1]),
                          std::floor(t / (shape[0] * shape[1]))};
    double base = a.index.constant;
    bool idle = false;
    for (int axis = 0; axis < 3; ++axis) {
      if (axis_loop[axis] < 0) continue;
      idle |= id[axis] >= static_cast<double>(g_.loops[axis_loop[axis]].extent);
      base += a.index.coef[axis_loop[axis]] * id[axis];
    }
    if (idle) continue;
    for (int lane = 0; lane < a.lanes; ++lane) {
      const double element = std::floor(base + lane_coef * lane);
      const double byte = element * a.elem_bytes;
      elements.push_back(static_cast<int64_t>(element));
      sectors.push_back(static_cast<int64_t>(std::floor(byte / 32.0)));
      requests[wide ? 0 : static_cast<size_t>(lane)].push_back(static_cast<int64_t>(std::floor(byte / 4.0)));
    }
  }
  if (elements.empty()) return w;
  auto distinct = [](std::vector<int64_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return static_cast<double>(v.size());
  };
  w.sectors = distinct(sectors);
  w.efficiency = distinct(elements) * a.elem_bytes / (w.sectors * 32.0);
  const double request_bytes = static_cast<double>(threads) * (wide ? a.lanes : 1) * a.elem_bytes;
  const double phases = std::max(1.0, std::ceil(request_bytes / 128.0));
  for (std::vector<int64_t>& words : requests) {
    distinct(words);
    int per_bank[32] = {};
    for (int64_t word : words) ++per_bank[((word % 32) + 32) % 32];
    w.bank_ways = std::max(w.bank_ways, *std::max_element(per_bank, per_bank + 32) / phases);
  }
  w.bank_ways = std::max(w.bank_ways, 1.0);
  return w;
}

// Cache lines entered when running the nest in order: the innermost loop that moves the access
// walks ceil(extent x stride / line) lines per run (one per iteration beyond a line's stride);
// every loop outside it repeats the run.
double RowBuilder::lines_of(const Access& a, double line_elems) const {
  int k = -1;
  for (int i = nloops_; i >= 0; --i)
    if (a.index.coef[i] != 0 && extent_at(i, a.lanes) > 1) {
      k = i;
      break;
    }
  if (k < 0) return 1;
  double c = std::fabs(a.index.coef[k]), e = extent_at(k, a.lanes);
  double run = c < line_elems ? std::ceil(e * c / line_elems) : e;
  for (int i = 0; i < k; ++i) run *= extent_at(i, a.lanes);
  return std::max(run, 1.0);
}

void RowBuilder::buffers() {
  const double line_bytes = target_.gpu ? 32.0 : static_cast<double>(std::max(target_.cache_line_bytes, 1));
  std::vector<BufferStats> stats;
  for (const Access& a : accesses_) {
    auto it = std::find_if(stats.begin(), stats.end(), [&](const BufferStats& s) { return *s.name == *a.buffer; });
    if (it == stats.end()) {
      stats.push_back(BufferStats{a.buffer});
      it = stats.end() - 1;
      it->first = &a;
      it->elem_bytes = a.elem_bytes;
    }
    BufferStats& s = *it;
    (a.write ? s.write : s.read) = true;
    if (a.copy == 0) ++s.occurrences;
    double line_elems = std::max(1.0, line_bytes / a.elem_bytes);
    double count = prod_ * a.lanes;
    double fp = footprint(a, 0);
    double min_stride = line_elems;
    double lo = a.index.constant, hi = a.index.constant;
    for (int i = 0; i <= nloops_; ++i) {
      double c = a.index.coef[i], e = extent_at(i, a.lanes);
      if (c == 0 || e <= 1) continue;
      min_stride = std::min(min_stride, std::fabs(c));
      (c > 0 ? hi : lo) += c * (e - 1);
    }
    min_stride = std::max(min_stride, 1.0);
    if (&a == s.first) s.lo = lo, s.hi = hi;
    s.lo = std::min(s.lo, lo);
    s.hi = std::max(s.hi, hi);
    s.bytes += count * a.elem_bytes;
    s.unique_elems += fp;
    s.lines += lines_of(a, line_elems);
    s.unique_lines += std::ceil(fp * min_stride / line_elems);
  }
  std::sort(stats.begin(), stats.end(), [](const BufferStats& a, const BufferStats& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : *a.name < *b.name;
  });

  double bytes_per_iteration = 0;  // of all accesses of the row, one execution of its stores
  for (const Access& a : accesses_) bytes_per_iteration += static_cast<double>(a.lanes) * a.elem_bytes;

  for (int slot = 0; slot < kMaxBuffers && slot < static_cast<int>(stats.size()); ++slot) {
    const BufferStats& s = stats[slot];
    auto col = [&](BufferColumn c) { return buffer_column(slot, c); };
    set(col(kAccRead), s.read && !s.write ? 1 : 0);
    set(col(kAccWrite), s.write && !s.read ? 1 : 0);
    set(col(kAccReadWrite), s.read && s.write ? 1 : 0);
    double span = std::floor(s.hi - s.lo) + 1;
    double unique = std::min(s.unique_elems, std::max(span, 1.0));
    double line_elems = std::max(1.0, line_bytes / s.elem_bytes);
    set(col(kBytes), log1p2(s.bytes));
    set(col(kUniqueBytes), log1p2(unique * s.elem_bytes));
    set(col(kLines), log1p2(s.lines));
    set(col(kUniqueLines), log1p2(std::min(s.unique_lines, std::ceil(span / line_elems) + 1)));

    // Reuse: the innermost loop the access does not move with revisits the same data every
    // iteration; otherwise several accesses of one execution share it; otherwise none.
    const Access& a = *s.first;
    int reuse_loop = -1;
    for (int i = nloops_ - 1; i >= 0; --i)
      if (a.index.coef[i] == 0 && g_.loops[i].extent > 1) {
        reuse_loop = i;
        break;
      }
    if (reuse_loop >= 0) {
      double inner = 1;
      for (int i = reuse_loop + 1; i < nloops_; ++i) inner *= static_cast<double>(g_.loops[i].extent);
      set(col(kReuseLoop), 1);
      set(col(kReuseDistIter), log1p2(inner));
      set(col(kReuseDistBytes), log1p2(inner * bytes_per_iteration));
      set(col(kReuseCount), log1p2(static_cast<double>(g_.loops[reuse_loop].extent)));
    } else if (s.occurrences > 1) {
      set(col(kReuseSerial), 1);
      set(col(kReuseDistIter), log1p2(1));
      set(col(kReuseDistBytes), log1p2(bytes_per_iteration));
      set(col(kReuseCount), log1p2(s.occurrences - 1));
    } else {
      set(col(kReuseNone), 1);
    }
    double stride = 0;
    for (int i = nloops_; i >= 0; --i)
      if (a.index.coef[i] != 0 && extent_at(i, a.lanes) > 1) {
        stride = std::fabs(a.index.coef[i]);
        break;
      }
    set(col(kStride), log1p2(stride));
    const StmtNode* alloc = allocation_of(*s.name, nullptr);
    set(col(kScopeShared), alloc && alloc->scope == MemScope::Shared ? 1 : 0);
    // Fragments are registers, as local buffers are.
    const bool registers = alloc && (alloc->scope == MemScope::Local || is_fragment(alloc->scope));
    set(col(kScopeLocal), registers ? 1 : 0);
    if (target_.gpu && !registers) {
      WarpAccess w = warp_access(a);
      set(col(kWarpSectors), log1p2(w.sectors));
      set(col(kWarpEfficiency), w.efficiency);
      if (alloc && alloc->scope == MemScope::Shared) set(col(kBankWays), w.bank_ways);
    }
  }
}

}  // namespace tessel::feature
