// The neural ranker: standardized inputs, two ReLU layers, one linear score; Adam on the pairwise
// logistic loss, a few groups per step. See mlp_ranker.h.
#include "costmodel/mlp_ranker.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <thread>

#include <sched.h>

#include "schedule/te/error.h"

namespace tessel {

namespace {

// Feature columns are log2 values with -64 for "none" (a zero count); a floor keeps that sentinel
// from dominating a column's mean and spread.
constexpr float kFloor = -40.0f;

// The threads to use: `nthread`, or (0) the CPUs this process may run on, which on a shared host can be
// far fewer than the machine has.
int thread_count(int nthread) {
  if (nthread > 0) return nthread;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Calls work(begin, end, part) on `parts` contiguous slices of [0, n) on their own threads (the first
// on this one); `parts` is cut down so that no slice is shorter than `min_slice`.
template <typename Work>
int parallel_slices(size_t n, int parts, size_t min_slice, Work work) {
  parts = static_cast<int>(std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(parts), n / std::max<size_t>(1, min_slice))));
  std::vector<std::thread> pool;
  auto slice = [&](int p) { work(n * p / parts, n * (p + 1) / parts, p); };
  for (int p = 1; p < parts; ++p) pool.emplace_back(slice, p);
  slice(0);
  for (std::thread& t : pool) t.join();
  return parts;
}

// The hot loops are compiled twice, for x86-64's baseline and for AVX2 with FMA (chosen at load
// time by the CPU), the small helpers inlined into each.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TESSEL_VECTOR_CLONES __attribute__((target_clones("default", "arch=haswell")))
#else
#define TESSEL_VECTOR_CLONES
#endif

inline __attribute__((always_inline)) void axpy(float a, const float* x, float* y, int n) {
#pragma omp simd
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

inline __attribute__((always_inline)) float dot(const float* x, const float* y, int n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

using Layer = MlpRanker::Layer;

// out[r] = relu?(in[r] W + b) for rows [begin, end).
TESSEL_VECTOR_CLONES void layer_forward(const Layer& l, const float* in, float* out, size_t begin, size_t end, bool relu) {
  for (size_t r = begin; r < end; ++r) {
    float* o = out + r * static_cast<size_t>(l.out);
    std::copy(l.bias.begin(), l.bias.end(), o);
    const float* x = in + r * static_cast<size_t>(l.in);
    for (int i = 0; i < l.in; ++i)
      if (x[i] != 0) axpy(x[i], &l.weight[static_cast<size_t>(i) * l.out], o, l.out);
    if (relu)
      for (int j = 0; j < l.out; ++j) o[j] = std::max(o[j], 0.0f);
  }
}

// Activations of a batch of rows: the two hidden layers and the scores.
struct Activations {
  std::vector<float> h1, h2, score;
  void resize(size_t rows, const Layer* layers) {
    h1.resize(rows * static_cast<size_t>(layers[0].out));
    h2.resize(rows * static_cast<size_t>(layers[1].out));
    score.resize(rows);
  }
};

void forward(const Layer* layers, const float* x, Activations& a, size_t begin, size_t end) {
  layer_forward(layers[0], x, a.h1.data(), begin, end, true);
  layer_forward(layers[1], a.h1.data(), a.h2.data(), begin, end, true);
  layer_forward(layers[2], a.h2.data(), a.score.data(), begin, end, false);
}

// Accumulates into `grad` (the three layers' weight and bias gradients) the gradient of the loss
// whose derivative by each row's score is d_score, for rows [begin, end).
TESSEL_VECTOR_CLONES void backward(const Layer* layers, const float* x, const Activations& a, const std::vector<float>& d_score,
              Layer* grad, size_t begin, size_t end) {
  const int h1 = layers[0].out, h2 = layers[1].out, in = layers[0].in;
  std::vector<float> g2(static_cast<size_t>(h2)), g1(static_cast<size_t>(h1));
  for (size_t r = begin; r < end; ++r) {
    const float d = d_score[r];
    if (d == 0) continue;
    const float* a1 = &a.h1[r * static_cast<size_t>(h1)];
    const float* a2 = &a.h2[r * static_cast<size_t>(h2)];
    const float* xr = x + r * static_cast<size_t>(in);
    // score = a2 . w3 + b3
    axpy(d, a2, grad[2].weight.data(), h2);
    grad[2].bias[0] += d;
    for (int j = 0; j < h2; ++j) g2[static_cast<size_t>(j)] = a2[j] > 0 ? d * layers[2].weight[static_cast<size_t>(j)] : 0.0f;
    // a2 = relu(a1 W2 + b2)
    for (int i = 0; i < h1; ++i)
      if (a1[i] > 0) axpy(a1[i], g2.data(), &grad[1].weight[static_cast<size_t>(i) * h2], h2);
    axpy(1.0f, g2.data(), grad[1].bias.data(), h2);
    for (int i = 0; i < h1; ++i)
      g1[static_cast<size_t>(i)] = a1[i] > 0 ? dot(g2.data(), &layers[1].weight[static_cast<size_t>(i) * h2], h2) : 0.0f;
    // a1 = relu(x W1 + b1)
    for (int i = 0; i < in; ++i)
      if (xr[i] != 0) axpy(xr[i], g1.data(), &grad[0].weight[static_cast<size_t>(i) * h1], h1);
    axpy(1.0f, g1.data(), grad[0].bias.data(), h1);
  }
}

Layer zero_like(const Layer& l) {
  Layer z;
  z.in = l.in;
  z.out = l.out;
  z.weight.assign(l.weight.size(), 0.0f);
  z.bias.assign(l.bias.size(), 0.0f);
  return z;
}

// Adam's moments of one layer.
struct Moments {
  Layer m, v;
};

// Sums the parts' gradients of elements [begin, end) of one parameter vector into parts[0] and takes
// Adam's step on them.
void adam_range(std::vector<float>& p, const std::vector<const std::vector<float>*>& parts, std::vector<float>& m,
                std::vector<float>& v, double lr, double decay, int step, size_t begin, size_t end) {
  const float c1 = static_cast<float>(1.0 - std::pow(0.9, step)), c2 = static_cast<float>(1.0 - std::pow(0.999, step));
  for (size_t i = begin; i < end; ++i) {
    float gi = static_cast<float>(decay) * p[i];
    for (const std::vector<float>* part : parts) gi += (*part)[i];
    m[i] = 0.9f * m[i] + 0.1f * gi;
    v[i] = 0.999f * v[i] + 0.001f * gi * gi;
    p[i] -= static_cast<float>(lr) * (m[i] / c1) / (std::sqrt(v[i] / c2) + 1e-8f);
  }
}

bool options_valid(const MlpOptions& o) {
  return o.hidden1 > 0 && o.hidden2 > 0 && o.epochs > 0 && o.groups_per_step > 0 && o.programs_per_group >= 0 && o.programs_per_group != 1 && o.min_steps >= 0 &&
         o.learning_rate > 0 && o.weight_decay >= 0 && o.nthread >= 0;
}

}  // namespace

MlpRanker::MlpRanker(const MlpOptions& options) : options_(options) {
  TESSEL_CHECK(options_valid(options), "MlpOptions out of range");
}

// Standardization from the training rows, He-initialized weights, zero biases.
void MlpRanker::initialize(const std::vector<float>& rows, int width, std::mt19937_64& rng) {
  const size_t w = static_cast<size_t>(width);
  const size_t n = rows.size() / w;
  width_ = width;
  shift_.assign(w, 0.0f);
  scale_.assign(w, 1.0f);
  for (size_t c = 0; c < w; ++c) {
    double sum = 0, sq = 0;
    for (size_t r = 0; r < n; ++r) {
      const double v = std::max(rows[r * w + c], kFloor);
      sum += v;
      sq += v * v;
    }
    const double mean = n ? sum / static_cast<double>(n) : 0.0;
    const double sd = n ? std::sqrt(std::max(0.0, sq / static_cast<double>(n) - mean * mean)) : 0.0;
    shift_[c] = static_cast<float>(mean);
    scale_[c] = sd > 1e-6 ? static_cast<float>(1.0 / sd) : 1.0f;
  }
  const int sizes[4] = {width, options_.hidden1, options_.hidden2, 1};
  for (int k = 0; k < 3; ++k) {
    Layer& l = layers_[k];
    l.in = sizes[k];
    l.out = sizes[k + 1];
    std::normal_distribution<float> he(0.0f, static_cast<float>(std::sqrt(2.0 / l.in)));
    l.weight.resize(static_cast<size_t>(l.in) * l.out);
    for (float& v : l.weight) v = he(rng);
    l.bias.assign(static_cast<size_t>(l.out), 0.0f);
  }
}

void MlpRanker::train(const std::vector<float>& rows, int width, const std::vector<double>& labels,
                      const std::vector<int>& groups, bool resume) {
  TESSEL_CHECK(width > 0 && rows.size() == labels.size() * static_cast<size_t>(width) && groups.size() == labels.size(),
               "MlpRanker::train: rows, labels and groups do not agree");
  const size_t n = labels.size();
  const size_t w = static_cast<size_t>(width);
  std::mt19937_64 rng(options_.seed ^ 0x6d6c7072616e6bULL ^ (resume ? n : 0));
  resume = resume && trained() && width == width_;
  if (!resume) initialize(rows, width, rng);

  // The groups that hold a pair to learn from, their members in sample order.
  std::map<int, std::vector<size_t>> by_group;
  for (size_t p = 0; p < n; ++p) by_group[groups[p]].push_back(p);
  std::vector<std::vector<size_t>> members;
  for (auto& [g, idx] : by_group) {
    bool differ = false;
    for (size_t p : idx) differ |= labels[p] != labels[idx.front()];
    if (differ) members.push_back(std::move(idx));
  }
  if (members.empty()) {  // nothing to rank yet: stay untrained (or as loaded)
    if (!resume) width_ = 0;
    return;
  }

  const size_t per_epoch = (members.size() + static_cast<size_t>(options_.groups_per_step) - 1) / options_.groups_per_step;
  const size_t total = std::max(per_epoch * static_cast<size_t>(options_.epochs), static_cast<size_t>(options_.min_steps));
  const int threads = thread_count(options_.nthread);

  Moments moments[3];
  for (int k = 0; k < 3; ++k) moments[k] = {zero_like(layers_[k]), zero_like(layers_[k])};
  std::vector<std::vector<Layer>> partial(static_cast<size_t>(threads));
  for (auto& t : partial)
    for (int k = 0; k < 3; ++k) t.push_back(zero_like(layers_[k]));

  std::vector<size_t> order(members.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<float> x;
  std::vector<float> d_score;
  std::vector<std::vector<size_t>> drawn;
  Activations act;
  size_t cursor = order.size();
  for (size_t step = 1; step <= total; ++step) {
    // The next groups_per_step groups of a shuffled pass.
    std::vector<const std::vector<size_t>*> batch;
    while (batch.size() < static_cast<size_t>(options_.groups_per_step) && batch.size() < members.size()) {
      if (cursor == order.size()) {
        std::shuffle(order.begin(), order.end(), rng);
        cursor = 0;
      }
      batch.push_back(&members[order[cursor++]]);
    }
    if (options_.programs_per_group > 0) {  // a random draw of each group's programs
      drawn.resize(batch.size());
      for (size_t k = 0; k < batch.size(); ++k) {
        drawn[k].clear();
        std::sample(batch[k]->begin(), batch[k]->end(), std::back_inserter(drawn[k]),
                    static_cast<size_t>(options_.programs_per_group), rng);
        batch[k] = &drawn[k];
      }
    }
    size_t rows_in_batch = 0;
    for (const auto* g : batch) rows_in_batch += g->size();
    x.resize(rows_in_batch * w);
    size_t r = 0;
    for (const auto* g : batch)
      for (size_t p : *g) standardize(&rows[p * w], &x[r++ * w]);
    act.resize(rows_in_batch, layers_);
    parallel_slices(rows_in_batch, threads, 64, [&](size_t b, size_t e, int) { forward(layers_, x.data(), act, b, e); });

    // d(loss)/d(score): each group's pairs scaled by 1/(n - 1), the groups averaged.
    d_score.assign(rows_in_batch, 0.0f);
    size_t offset = 0;
    for (const auto* g : batch) {
      const size_t m = g->size();
      const double scale = 1.0 / (static_cast<double>(m - 1) * static_cast<double>(batch.size()));
      for (size_t a = 0; a < m; ++a)
        for (size_t b = a + 1; b < m; ++b) {
          size_t hi = a, lo = b;
          const double la = labels[(*g)[a]], lb = labels[(*g)[b]];
          if (la == lb) continue;
          if (la < lb) std::swap(hi, lo);
          const double sig = 1.0 / (1.0 + std::exp(std::clamp(
                                               static_cast<double>(act.score[offset + hi] - act.score[offset + lo]), -50.0, 50.0)));
          d_score[offset + hi] -= static_cast<float>(scale * sig);
          d_score[offset + lo] += static_cast<float>(scale * sig);
        }
      offset += m;
    }

    const int used = parallel_slices(rows_in_batch, threads, 64, [&](size_t b, size_t e, int part) {
      for (Layer& l : partial[static_cast<size_t>(part)]) {
        std::fill(l.weight.begin(), l.weight.end(), 0.0f);
        std::fill(l.bias.begin(), l.bias.end(), 0.0f);
      }
      backward(layers_, x.data(), act, d_score, partial[static_cast<size_t>(part)].data(), b, e);
    });
    // The parts' gradients summed and Adam's step taken, the parameters split among the threads.
    for (int k = 0; k < 3; ++k) {
      std::vector<const std::vector<float>*> weights, biases;
      for (int t = 0; t < used; ++t) {
        weights.push_back(&partial[static_cast<size_t>(t)][static_cast<size_t>(k)].weight);
        biases.push_back(&partial[static_cast<size_t>(t)][static_cast<size_t>(k)].bias);
      }
      Layer& l = layers_[k];
      const int s = static_cast<int>(step);
      parallel_slices(l.weight.size(), threads, 8192, [&](size_t b, size_t e, int) {
        adam_range(l.weight, weights, moments[k].m.weight, moments[k].v.weight, options_.learning_rate,
                   options_.weight_decay, s, b, e);
      });
      adam_range(l.bias, biases, moments[k].m.bias, moments[k].v.bias, options_.learning_rate, options_.weight_decay, s,
                 0, l.bias.size());
    }
  }
}

void MlpRanker::standardize(const float* row, float* out) const {
  for (size_t c = 0; c < shift_.size(); ++c) out[c] = (std::max(row[c], kFloor) - shift_[c]) * scale_[c];
}

std::vector<double> MlpRanker::predict(const std::vector<float>& rows) const {
  TESSEL_CHECK(trained(), "MlpRanker::predict: not trained");
  const size_t w = static_cast<size_t>(width_);
  TESSEL_CHECK(rows.size() % w == 0, "MlpRanker::predict: rows do not match the trained width");
  const size_t n = rows.size() / w;
  std::vector<float> x(rows.size());
  for (size_t r = 0; r < n; ++r) standardize(&rows[r * w], &x[r * w]);
  Activations act;
  act.resize(n, layers_);
  parallel_slices(n, thread_count(options_.nthread), 64, [&](size_t b, size_t e, int) { forward(layers_, x.data(), act, b, e); });
  return std::vector<double>(act.score.begin(), act.score.end());
}

nlohmann::json MlpRanker::options_to_json(const MlpOptions& o) {
  return {{"hidden1", o.hidden1},
          {"hidden2", o.hidden2},
          {"epochs", o.epochs},
          {"groups_per_step", o.groups_per_step},
          {"programs_per_group", o.programs_per_group},
          {"min_steps", o.min_steps},
          {"learning_rate", o.learning_rate},
          {"weight_decay", o.weight_decay},
          {"nthread", o.nthread},
          {"seed", o.seed}};
}

MlpOptions MlpRanker::options_from_json(const nlohmann::json& j) {
  MlpOptions o;
  o.hidden1 = j.at("hidden1").get<int>();
  o.hidden2 = j.at("hidden2").get<int>();
  o.epochs = j.at("epochs").get<int>();
  o.groups_per_step = j.at("groups_per_step").get<int>();
  o.programs_per_group = j.at("programs_per_group").get<int>();
  o.min_steps = j.at("min_steps").get<int>();
  o.learning_rate = j.at("learning_rate").get<double>();
  o.weight_decay = j.at("weight_decay").get<double>();
  o.nthread = j.at("nthread").get<int>();
  o.seed = j.at("seed").get<uint64_t>();
  if (!options_valid(o)) throw InputError("neural ranker: options out of range");
  return o;
}

nlohmann::json MlpRanker::to_json() const {
  nlohmann::json layers = nlohmann::json::array();
  if (trained())
    for (const Layer& l : layers_) layers.push_back({{"in", l.in}, {"out", l.out}, {"weight", l.weight}, {"bias", l.bias}});
  nlohmann::json j = options_to_json(options_);
  j["width"] = width_;
  j["shift"] = shift_;
  j["scale"] = scale_;
  j["layers"] = layers;
  return j;
}

MlpRanker MlpRanker::from_json(const nlohmann::json& j) {
  const MlpOptions o = options_from_json(j);
  MlpRanker m(o);
  m.width_ = j.at("width").get<int>();
  if (m.width_ == 0) return m;
  m.shift_ = j.at("shift").get<std::vector<float>>();
  m.scale_ = j.at("scale").get<std::vector<float>>();
  const nlohmann::json& layers = j.at("layers");
  const int sizes[4] = {m.width_, o.hidden1, o.hidden2, 1};
  if (m.width_ < 0 || m.shift_.size() != static_cast<size_t>(m.width_) || m.scale_.size() != m.shift_.size() ||
      !layers.is_array() || layers.size() != 3)
    throw InputError("neural ranker: input standardization or layers do not match its width");
  for (int k = 0; k < 3; ++k) {
    Layer& l = m.layers_[k];
    l.in = layers[static_cast<size_t>(k)].at("in").get<int>();
    l.out = layers[static_cast<size_t>(k)].at("out").get<int>();
    l.weight = layers[static_cast<size_t>(k)].at("weight").get<std::vector<float>>();
    l.bias = layers[static_cast<size_t>(k)].at("bias").get<std::vector<float>>();
    if (l.in != sizes[k] || l.out != sizes[k + 1] || l.weight.size() != static_cast<size_t>(l.in) * l.out ||
        l.bias.size() != static_cast<size_t>(l.out))
      throw InputError("neural ranker: layer " + std::to_string(k + 1) + " has the wrong shape");
  }
  return m;
}

}  // namespace tessel
