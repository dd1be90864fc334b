// The neural ranker: standardized inputs, an optional encoder of feature rows summed per program, one or
// two ReLU layers (dropout on the last one's input in training), one linear score, the batch's products
// through OpenBLAS; Adam on the pairwise logistic loss, a few groups per step. See mlp_ranker.h.
#include "costmodel/mlp_ranker.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "costmodel/blas.h"
#include "schedule/te/error.h"
#include "schedule/te/parallel.h"

namespace tessel {

namespace {

// Feature columns are log2 values with -64 for "none" (a zero count); a floor keeps that sentinel
// from dominating a column's mean and spread.
constexpr float kFloor = -40.0f;

// The threads to use: `nthread`, or (0) the CPUs this process may run on.
int thread_count(int nthread) { return nthread > 0 ? nthread : available_cores(); }

using Layer = MlpRanker::Layer;

// C (m x n) = A B + beta C, all row-major; `ta` / `tb`: A / B stored transposed (k x m, n x k).
void gemm(bool ta, bool tb, size_t m, size_t n, size_t k, const float* a, const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (size_t i = 0; i < m * n; ++i) c[i] *= beta;
    return;
  }
  blas::sgemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(ta ? m : k),
              b, static_cast<int>(tb ? k : n), beta, c, static_cast<int>(n));
}

// out (rows x l.out) = relu?(in l.weight + l.bias).
void dense(const Layer& l, const float* in, size_t rows, std::vector<float>& out, bool relu) {
  const size_t width = static_cast<size_t>(l.out);
  out.resize(rows * width);
  for (size_t r = 0; r < rows; ++r) std::copy(l.bias.begin(), l.bias.end(), out.begin() + static_cast<ptrdiff_t>(r * width));
  gemm(false, false, rows, width, static_cast<size_t>(l.in), in, l.weight.data(), 1.0f, out.data());
  if (relu)
    for (float& v : out) v = std::max(v, 0.0f);
}

// A layer's gradient from its input `in` (rows x l.in) and the gradient `g` (rows x l.out) by its output.
void layer_gradient(const Layer& l, const float* in, const float* g, size_t rows, Layer& grad) {
  const size_t width = static_cast<size_t>(l.out);
  gemm(true, false, static_cast<size_t>(l.in), width, rows, in, g, 0.0f, grad.weight.data());
  std::fill(grad.bias.begin(), grad.bias.end(), 0.0f);
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < width; ++j) grad.bias[j] += g[r * width + j];
}

Layer zero_like(const Layer& l) {
  Layer z;
  z.in = l.in;
  z.out = l.out;
  z.weight.assign(l.weight.size(), 0.0f);
  z.bias.assign(l.bias.size(), 0.0f);
  return z;
}

Layer he_initialized(int in, int out, std::mt19937_64& rng) {
  Layer l;
  l.in = in;
  l.out = out;
  std::normal_distribution<float> he(0.0f, static_cast<float>(std::sqrt(2.0 / in)));
  l.weight.resize(static_cast<size_t>(in) * static_cast<size_t>(out));
  for (float& v : l.weight) v = he(rng);
  l.bias.assign(static_cast<size_t>(out), 0.0f);
  return l;
}

// Per column of the rows (width values each, floored), the shift and scale that standardize it.
void standardization(const float* rows, size_t n, size_t width, std::vector<float>& shift, std::vector<float>& scale) {
  shift.assign(width, 0.0f);
  scale.assign(width, 1.0f);
  for (size_t c = 0; c < width; ++c) {
    double sum = 0, sq = 0;
    for (size_t r = 0; r < n; ++r) {
      const double v = std::max(rows[r * width + c], kFloor);
      sum += v;
      sq += v * v;
    }
    const double mean = n ? sum / static_cast<double>(n) : 0.0;
    const double sd = n ? std::sqrt(std::max(0.0, sq / static_cast<double>(n) - mean * mean)) : 0.0;
    shift[c] = static_cast<float>(mean);
    scale[c] = sd > 1e-6 ? static_cast<float>(1.0 / sd) : 1.0f;
  }
}

void standardize(const float* row, const std::vector<float>& shift, const std::vector<float>& scale, float* out) {
  for (size_t c = 0; c < shift.size(); ++c) out[c] = (std::max(row[c], kFloor) - shift[c]) * scale[c];
}

// Adam's step on one parameter vector p, its gradient g (plus the L2 term).
void adam(std::vector<float>& p, const std::vector<float>& g, std::vector<float>& m, std::vector<float>& v, double lr,
          double decay, int step) {
  const float c1 = static_cast<float>(1.0 - std::pow(0.9, step)), c2 = static_cast<float>(1.0 - std::pow(0.999, step));
  const float rate = static_cast<float>(lr), l2 = static_cast<float>(decay);
  for (size_t i = 0; i < p.size(); ++i) {
    const float gi = l2 * p[i] + g[i];
    m[i] = 0.9f * m[i] + 0.1f * gi;
    v[i] = 0.999f * v[i] + 0.001f * gi * gi;
    p[i] -= rate * (m[i] / c1) / (std::sqrt(v[i] / c2) + 1e-8f);
  }
}

bool options_valid(const MlpOptions& o) {
  return o.encoder >= 0 && o.hidden1 > 0 && o.hidden2 >= 0 && o.epochs > 0 && o.groups_per_step > 0 &&
         o.programs_per_group >= 0 && o.programs_per_group != 1 && o.min_steps >= 0 && o.learning_rate > 0 &&
         o.weight_decay >= 0 && o.dropout >= 0 && o.dropout < 1 && o.nthread >= 0;
}

}  // namespace

// One batch through the network: its inputs, every layer's output, and the dropout factors.
struct MlpRanker::Pass {
  size_t programs = 0;
  std::vector<float> rows;          // standardized feature rows (with an encoder)
  std::vector<size_t> first_row;    // programs + 1
  std::vector<float> e1, e2;        // the encoder's layers, a row each
  std::vector<std::vector<float>> act;  // act[k]: head layer k's input (act[0] the pooled rows and the summary); act.back() the scores
  std::vector<float> keep;          // dropout factors of the dropped layer's input (0 or 1 / (1 - dropout))
  std::vector<float> kept;          // that input times them
  size_t dropped = 0;               // the head layer whose input drops out: the last hidden one
};

MlpRanker::MlpRanker(const MlpOptions& options) : options_(options) {
  TESSEL_CHECK(options_valid(options), "MlpOptions out of range");
}

std::vector<MlpRanker::Layer*> MlpRanker::parameters() {
  std::vector<Layer*> p;
  for (Layer& l : encoder_) p.push_back(&l);
  for (Layer& l : head_) p.push_back(&l);
  return p;
}

// Standardization from the training programs (and rows), He-initialized weights, zero biases.
void MlpRanker::initialize(const MlpInputs& inputs, int summary_width, int row_width, std::mt19937_64& rng) {
  const size_t n = inputs.summaries.size() / static_cast<size_t>(summary_width);
  width_ = summary_width;
  row_width_ = options_.encoder > 0 ? row_width : 0;
  standardization(inputs.summaries.data(), n, static_cast<size_t>(width_), shift_, scale_);
  encoder_.clear();
  head_.clear();
  if (row_width_ > 0) {
    standardization(inputs.rows.data(), inputs.rows.size() / static_cast<size_t>(row_width_),
                    static_cast<size_t>(row_width_), row_shift_, row_scale_);
    encoder_.push_back(he_initialized(row_width_, options_.encoder, rng));
    encoder_.push_back(he_initialized(options_.encoder, options_.encoder, rng));
  } else {
    row_shift_.clear();
    row_scale_.clear();
  }
  int in = width_ + (row_width_ > 0 ? options_.encoder : 0);
  for (int hidden : {options_.hidden1, options_.hidden2}) {
    if (hidden == 0) continue;
    head_.push_back(he_initialized(in, hidden, rng));
    in = hidden;
  }
  head_.push_back(he_initialized(in, 1, rng));
}

void MlpRanker::load_batch(const MlpInputs& inputs, const std::vector<size_t>& programs, Pass& pass) const {
  const size_t w = static_cast<size_t>(width_), he = row_width_ > 0 ? static_cast<size_t>(options_.encoder) : 0;
  const size_t in = he + w;
  pass.programs = programs.size();
  pass.act.resize(head_.size() + 1);
  std::vector<float>& z = pass.act[0];
  z.assign(programs.size() * in, 0.0f);  // the pooled encoding (filled by forward), then the summary
  for (size_t i = 0; i < programs.size(); ++i)
    standardize(&inputs.summaries[programs[i] * w], shift_, scale_, &z[i * in + he]);
  if (row_width_ == 0) return;
  const size_t rw = static_cast<size_t>(row_width_);
  pass.first_row.assign(1, 0);
  for (size_t p : programs) pass.first_row.push_back(pass.first_row.back() + inputs.first_row[p + 1] - inputs.first_row[p]);
  pass.rows.resize(pass.first_row.back() * rw);
  size_t r = 0;
  for (size_t p : programs)
    for (size_t q = inputs.first_row[p]; q < inputs.first_row[p + 1]; ++q, ++r)
      standardize(&inputs.rows[q * rw], row_shift_, row_scale_, &pass.rows[r * rw]);
}

void MlpRanker::forward(Pass& pass, bool dropout) const {
  const size_t n = pass.programs;
  if (row_width_ > 0) {  // each program's rows encoded and summed into the first columns of act[0]
    const size_t rows = pass.first_row.back(), he = static_cast<size_t>(options_.encoder);
    const size_t in = he + static_cast<size_t>(width_);
    dense(encoder_[0], pass.rows.data(), rows, pass.e1, true);
    dense(encoder_[1], pass.e1.data(), rows, pass.e2, true);
    for (size_t i = 0; i < n; ++i) {
      float* pooled = &pass.act[0][i * in];
      std::fill(pooled, pooled + he, 0.0f);
      for (size_t r = pass.first_row[i]; r < pass.first_row[i + 1]; ++r)
        for (size_t j = 0; j < he; ++j) pooled[j] += pass.e2[r * he + j];
    }
  }
  pass.dropped = head_.size() - 2;
  for (size_t k = 0; k < head_.size(); ++k) {
    const float* in = pass.act[k].data();
    if (dropout && k == pass.dropped) {
      pass.kept.resize(pass.act[k].size());
      for (size_t i = 0; i < pass.kept.size(); ++i) pass.kept[i] = pass.act[k][i] * pass.keep[i];
      in = pass.kept.data();
    }
    dense(head_[k], in, n, pass.act[k + 1], k + 1 < head_.size());
  }
}

// The gradient (into grads, in parameters() order, overwritten) of the loss whose derivative by each
// program's score is d_score.
void MlpRanker::backward(Pass& pass, bool dropout, const std::vector<float>& d_score, std::vector<Layer>& grads) const {
  const size_t n = pass.programs, first_head = encoder_.size();
  std::vector<float> g(d_score), g_in;
  for (size_t k = head_.size(); k-- > 0;) {
    const bool drops = dropout && k == pass.dropped;
    layer_gradient(head_[k], drops ? pass.kept.data() : pass.act[k].data(), g.data(), n, grads[first_head + k]);
    if (k == 0 && row_width_ == 0) break;
    const size_t in = static_cast<size_t>(head_[k].in);
    g_in.assign(n * in, 0.0f);
    gemm(false, true, n, in, static_cast<size_t>(head_[k].out), g.data(), head_[k].weight.data(), 0.0f, g_in.data());
    if (drops)
      for (size_t i = 0; i < g_in.size(); ++i) g_in[i] *= pass.keep[i];
    if (k > 0)  // act[k] is a ReLU's output
      for (size_t i = 0; i < g_in.size(); ++i)
        if (pass.act[k][i] <= 0) g_in[i] = 0.0f;
    g.swap(g_in);
  }
  if (row_width_ == 0) return;
  // g: by act[0]; its first columns are the sums of the rows' encodings.
  const size_t rows = pass.first_row.back(), he = static_cast<size_t>(options_.encoder);
  const size_t in = he + static_cast<size_t>(width_);
  std::vector<float> g2(rows * he), g1(rows * he);
  for (size_t i = 0; i < n; ++i)
    for (size_t r = pass.first_row[i]; r < pass.first_row[i + 1]; ++r)
      for (size_t j = 0; j < he; ++j) g2[r * he + j] = pass.e2[r * he + j] > 0 ? g[i * in + j] : 0.0f;
  layer_gradient(encoder_[1], pass.e1.data(), g2.data(), rows, grads[1]);
  gemm(false, true, rows, he, he, g2.data(), encoder_[1].weight.data(), 0.0f, g1.data());
  for (size_t i = 0; i < g1.size(); ++i)
    if (pass.e1[i] <= 0) g1[i] = 0.0f;
  layer_gradient(encoder_[0], pass.rows.data(), g1.data(), rows, grads[0]);
}

void MlpRanker::train(const std::vector<float>& summaries, int width, const std::vector<double>& labels,
                      const std::vector<int>& groups, bool resume) {
  TESSEL_CHECK(options_.encoder == 0, "MlpRanker::train: a ranker with an encoder needs the programs' rows");
  MlpInputs inputs;
  inputs.summaries = summaries;
  train(inputs, width, 0, labels, groups, resume);
}

void MlpRanker::train(const MlpInputs& inputs, int summary_width, int row_width, const std::vector<double>& labels,
                      const std::vector<int>& groups, bool resume) {
  const size_t n = labels.size();
  TESSEL_CHECK(summary_width > 0 && inputs.summaries.size() == n * static_cast<size_t>(summary_width) &&
                   groups.size() == n,
               "MlpRanker::train: summaries, labels and groups do not agree");
  TESSEL_CHECK(options_.encoder == 0 ||
                   (row_width > 0 && inputs.first_row.size() == n + 1 && inputs.first_row.front() == 0 &&
                    inputs.rows.size() == inputs.first_row.back() * static_cast<size_t>(row_width)),
               "MlpRanker::train: the programs' rows do not agree with the encoder");
  std::mt19937_64 rng(options_.seed ^ 0x6d6c7072616e6bULL ^ (resume ? n : 0));
  const int wanted_rows = options_.encoder > 0 ? row_width : 0;
  resume = resume && trained() && summary_width == width_ && wanted_rows == row_width_;
  if (!resume) initialize(inputs, summary_width, row_width, rng);

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
    if (!resume) width_ = row_width_ = 0;
    return;
  }

  const size_t per_epoch = (members.size() + static_cast<size_t>(options_.groups_per_step) - 1) / options_.groups_per_step;
  const size_t total = std::max(per_epoch * static_cast<size_t>(options_.epochs), static_cast<size_t>(options_.min_steps));
  const int threads = thread_count(options_.nthread);
  blas::set_threads(threads);

  std::vector<Layer*> params = parameters();
  std::vector<Layer> grads, first_moment, second_moment;
  for (Layer* l : params) {
    grads.push_back(zero_like(*l));
    first_moment.push_back(zero_like(*l));
    second_moment.push_back(zero_like(*l));
  }
  const bool dropout = options_.dropout > 0;
  const float kept = dropout ? static_cast<float>(1.0 / (1.0 - options_.dropout)) : 1.0f;
  const uint64_t drop_below = static_cast<uint64_t>(options_.dropout * 4294967296.0);  // of 2^32

  std::vector<size_t> order(members.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<float> d_score;
  std::vector<size_t> programs, drawn;
  std::vector<size_t> group_size;
  Pass pass;
  size_t cursor = order.size();
  for (size_t step = 1; step <= total; ++step) {
    // The next groups_per_step groups of a shuffled pass, each whole or a random draw of its programs.
    programs.clear();
    group_size.clear();
    while (group_size.size() < static_cast<size_t>(options_.groups_per_step) && group_size.size() < members.size()) {
      if (cursor == order.size()) {
        std::shuffle(order.begin(), order.end(), rng);
        cursor = 0;
      }
      const std::vector<size_t>& group = members[order[cursor++]];
      if (options_.programs_per_group > 0) {
        drawn.clear();
        std::sample(group.begin(), group.end(), std::back_inserter(drawn), static_cast<size_t>(options_.programs_per_group), rng);
        programs.insert(programs.end(), drawn.begin(), drawn.end());
        group_size.push_back(drawn.size());
      } else {
        programs.insert(programs.end(), group.begin(), group.end());
        group_size.push_back(group.size());
      }
    }
    load_batch(inputs, programs, pass);
    if (dropout) {  // each input of the last hidden layer kept with probability 1 - dropout
      pass.keep.resize(programs.size() * static_cast<size_t>(head_[head_.size() - 2].in));
      for (size_t i = 0; i < pass.keep.size(); i += 2) {
        const uint64_t bits = rng();
        pass.keep[i] = (bits & 0xffffffffu) < drop_below ? 0.0f : kept;
        if (i + 1 < pass.keep.size()) pass.keep[i + 1] = (bits >> 32) < drop_below ? 0.0f : kept;
      }
    }
    forward(pass, dropout);
    const std::vector<float>& score = pass.act.back();

    // d(loss)/d(score): each group's pairs scaled by 1/(n - 1), the groups averaged.
    d_score.assign(programs.size(), 0.0f);
    size_t offset = 0;
    for (size_t m : group_size) {
      const double scale = 1.0 / (static_cast<double>(m - 1) * static_cast<double>(group_size.size()));
      for (size_t a = 0; a < m; ++a)
        for (size_t b = a + 1; b < m; ++b) {
          size_t hi = a, lo = b;
          const double la = labels[programs[offset + a]], lb = labels[programs[offset + b]];
          if (la == lb) continue;
          if (la < lb) std::swap(hi, lo);
          const double sig = 1.0 / (1.0 + std::exp(std::clamp(
                                               static_cast<double>(score[offset + hi] - score[offset + lo]), -50.0, 50.0)));
          d_score[offset + hi] -= static_cast<float>(scale * sig);
          d_score[offset + lo] += static_cast<float>(scale * sig);
        }
      offset += m;
    }

    backward(pass, dropout, d_score, grads);
    // Adam's step, on this thread: threads of its own would compete with OpenBLAS's, which wait for
    // the next product spinning.
    const int s = static_cast<int>(step);
    for (size_t k = 0; k < params.size(); ++k) {
      Layer& l = *params[k];
      adam(l.weight, grads[k].weight, first_moment[k].weight, second_moment[k].weight, options_.learning_rate,
           options_.weight_decay, s);
      adam(l.bias, grads[k].bias, first_moment[k].bias, second_moment[k].bias, options_.learning_rate,
           options_.weight_decay, s);
    }
  }
}

std::vector<double> MlpRanker::predict(const std::vector<float>& summaries) const {
  TESSEL_CHECK(row_width_ == 0, "MlpRanker::predict: a ranker with an encoder needs the programs' rows");
  MlpInputs inputs;
  inputs.summaries = summaries;
  return predict(inputs);
}

std::vector<double> MlpRanker::predict(const MlpInputs& inputs) const {
  TESSEL_CHECK(trained(), "MlpRanker::predict: not trained");
  const size_t w = static_cast<size_t>(width_);
  TESSEL_CHECK(inputs.summaries.size() % w == 0, "MlpRanker::predict: summaries do not match the trained width");
  const size_t n = inputs.summaries.size() / w;
  TESSEL_CHECK(row_width_ == 0 || (inputs.first_row.size() == n + 1 && inputs.first_row.front() == 0 &&
                                   inputs.rows.size() == inputs.first_row.back() * static_cast<size_t>(row_width_)),
               "MlpRanker::predict: the programs' rows do not agree with the encoder");
  blas::set_threads(thread_count(options_.nthread));
  std::vector<double> scores;
  scores.reserve(n);
  Pass pass;
  std::vector<size_t> programs;
  for (size_t begin = 0; begin < n; begin += 4096) {  // in slices: the encoder's activations stay small
    programs.resize(std::min(n, begin + 4096) - begin);
    std::iota(programs.begin(), programs.end(), begin);
    load_batch(inputs, programs, pass);
    forward(pass, false);
    scores.insert(scores.end(), pass.act.back().begin(), pass.act.back().end());
  }
  return scores;
}

nlohmann::json MlpRanker::options_to_json(const MlpOptions& o) {
  return {{"encoder", o.encoder},
          {"hidden1", o.hidden1},
          {"hidden2", o.hidden2},
          {"epochs", o.epochs},
          {"groups_per_step", o.groups_per_step},
          {"programs_per_group", o.programs_per_group},
          {"min_steps", o.min_steps},
          {"learning_rate", o.learning_rate},
          {"weight_decay", o.weight_decay},
          {"dropout", o.dropout},
          {"nthread", o.nthread},
          {"seed", o.seed}};
}

MlpOptions MlpRanker::options_from_json(const nlohmann::json& j) {
  MlpOptions o;
  o.encoder = j.value("encoder", 0);  // absent from the files of before the encoder: none
  o.hidden1 = j.at("hidden1").get<int>();
  o.hidden2 = j.at("hidden2").get<int>();
  o.epochs = j.at("epochs").get<int>();
  o.groups_per_step = j.at("groups_per_step").get<int>();
  o.programs_per_group = j.at("programs_per_group").get<int>();
  o.min_steps = j.at("min_steps").get<int>();
  o.learning_rate = j.at("learning_rate").get<double>();
  o.weight_decay = j.at("weight_decay").get<double>();
  o.dropout = j.value("dropout", 0.0);  // likewise: none
  o.nthread = j.at("nthread").get<int>();
  o.seed = j.at("seed").get<uint64_t>();
  if (!options_valid(o)) throw InputError("neural ranker: options out of range");
  return o;
}

namespace {

nlohmann::json layers_to_json(const std::vector<Layer>& layers) {
  nlohmann::json out = nlohmann::json::array();
  for (const Layer& l : layers) out.push_back({{"in", l.in}, {"out", l.out}, {"weight", l.weight}, {"bias", l.bias}});
  return out;
}

// Layers of the given (in, out) shapes from JSON; `what` names them in errors ("layer", "encoder layer").
std::vector<Layer> layers_from_json(const nlohmann::json& j, const std::vector<std::pair<int, int>>& shapes,
                                    const std::string& what) {
  if (!j.is_array() || j.size() != shapes.size())
    throw InputError("neural ranker: " + std::to_string(j.is_array() ? j.size() : 0) + " " + what + "s, its options make " +
                     std::to_string(shapes.size()));
  std::vector<Layer> layers(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) {
    Layer& l = layers[k];
    l.in = j[k].at("in").get<int>();
    l.out = j[k].at("out").get<int>();
    l.weight = j[k].at("weight").get<std::vector<float>>();
    l.bias = j[k].at("bias").get<std::vector<float>>();
    if (l.in != shapes[k].first || l.out != shapes[k].second ||
        l.weight.size() != static_cast<size_t>(l.in) * static_cast<size_t>(l.out) || l.bias.size() != static_cast<size_t>(l.out))
      throw InputError("neural ranker: " + what + " " + std::to_string(k + 1) + " has the wrong shape");
  }
  return layers;
}

}  // namespace

nlohmann::json MlpRanker::to_json() const {
  nlohmann::json j = options_to_json(options_);
  j["width"] = width_;
  j["shift"] = shift_;
  j["scale"] = scale_;
  j["layers"] = layers_to_json(head_);
  if (row_width_ > 0) {
    j["row_width"] = row_width_;
    j["row_shift"] = row_shift_;
    j["row_scale"] = row_scale_;
    j["encoder_layers"] = layers_to_json(encoder_);
  }
  return j;
}

MlpRanker MlpRanker::from_json(const nlohmann::json& j) {
  const MlpOptions o = options_from_json(j);
  MlpRanker m(o);
  m.width_ = j.at("width").get<int>();
  if (m.width_ == 0) return m;
  m.shift_ = j.at("shift").get<std::vector<float>>();
  m.scale_ = j.at("scale").get<std::vector<float>>();
  if (m.width_ < 0 || m.shift_.size() != static_cast<size_t>(m.width_) || m.scale_.size() != m.shift_.size())
    throw InputError("neural ranker: input standardization or layers do not match its width");
  if (o.encoder > 0) {
    m.row_width_ = j.at("row_width").get<int>();
    m.row_shift_ = j.at("row_shift").get<std::vector<float>>();
    m.row_scale_ = j.at("row_scale").get<std::vector<float>>();
    if (m.row_width_ <= 0 || m.row_shift_.size() != static_cast<size_t>(m.row_width_) ||
        m.row_scale_.size() != m.row_shift_.size())
      throw InputError("neural ranker: the rows' standardization does not match its row width");
    m.encoder_ = layers_from_json(j.at("encoder_layers"), {{m.row_width_, o.encoder}, {o.encoder, o.encoder}}, "encoder layer");
  }
  std::vector<std::pair<int, int>> shapes;
  int in = m.width_ + (o.encoder > 0 ? o.encoder : 0);
  for (int hidden : {o.hidden1, o.hidden2}) {
    if (hidden == 0) continue;
    shapes.emplace_back(in, hidden);
    in = hidden;
  }
  shapes.emplace_back(in, 1);
  m.head_ = layers_from_json(j.at("layers"), shapes, "layer");
  return m;
}

}  // namespace tessel
