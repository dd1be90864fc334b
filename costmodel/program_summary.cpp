// A program's feature rows summarized as one vector (program_summary, features.h), for a model that
// scores a program whole: its heaviest row, each column's maximum and minimum, and its row count.
#include <algorithm>
#include <cmath>

#include "costmodel/feature_layout.h"
#include "costmodel/features.h"
#include "schedule/te/error.h"

namespace tessel {

using namespace feature;

int program_summary_width() { return 3 * kWidth + 1; }

std::vector<float> program_summary(const ProgramFeatures& features) {
  std::vector<float> out(static_cast<size_t>(program_summary_width()), 0.0f);
  if (features.rows == 0) return out;
  TESSEL_CHECK(features.values.size() == static_cast<size_t>(features.rows) * kWidth,
               "program_summary: features do not match the feature width");
  auto row = [&](int r) { return features.values.data() + static_cast<size_t>(r) * kWidth; };
  // The arithmetic columns are log2(count / F): 2^value adds the row's share of the float operations.
  auto work = [](const float* v) {
    double sum = 0;
    for (int c = kFloatAddSub; c <= kFloatAct; ++c) sum += std::exp2(static_cast<double>(v[c]));
    return sum;
  };
  const int bytes = buffer_column(0, kBytes);
  int heavy = 0;
  double heavy_work = work(row(0));
  for (int r = 1; r < features.rows; ++r) {
    const double w = work(row(r));
    // Equal within float rounding (the columns are rounded logs): a tie.
    const bool tie = std::abs(w - heavy_work) <= 1e-6 * std::max(w, heavy_work);
    if ((!tie && w > heavy_work) || (tie && row(r)[bytes] > row(heavy)[bytes])) heavy = r, heavy_work = w;
  }
  float* max = out.data() + kWidth;
  float* min = out.data() + 2 * kWidth;
  std::copy(row(heavy), row(heavy) + kWidth, out.begin());
  std::copy(row(0), row(0) + kWidth, max);
  std::copy(row(0), row(0) + kWidth, min);
  for (int r = 1; r < features.rows; ++r)
    for (int c = 0; c < kWidth; ++c) {
      max[c] = std::max(max[c], row(r)[c]);
      min[c] = std::min(min[c], row(r)[c]);
    }
  out.back() = static_cast<float>(features.rows);
  return out;
}

}  // namespace tessel
