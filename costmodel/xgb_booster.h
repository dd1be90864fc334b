// The thin layer over XGBoost's C API that the learned cost model grows its trees with: a matrix and
// a booster that own their handles, every call's status checked. XGBoost's own header is included
// by xgb_booster.cpp only, so the rest of tessel builds without it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "schedule/te/error.h"

namespace tessel {

// XGBoost refused a call (out of memory, a corrupt booster): the message is XGBoost's own.
class XGBoostError : public Error {
 public:
  explicit XGBoostError(const std::string& message) : Error(message) {}
};

namespace xgb {

// `rows` x `width` values, row-major (an XGBoost DMatrix; NaN would read as missing).
class Matrix {
 public:
  Matrix(const std::vector<float>& values, size_t rows, int width);
  ~Matrix();
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  void* handle() const { return handle_; }

 private:
  void* handle_ = nullptr;
};

// Turns the current margins of every row into each row's gradient and hessian (both sized to the rows).
using GradientFn =
    std::function<void(const std::vector<float>& margins, std::vector<float>& grad, std::vector<float>& hess)>;

// An XGBoost booster, or none yet. Trees grow with a custom objective: one round predicts the
// training rows, asks the objective for gradients and adds one tree fitted to them.
class Booster {
 public:
  using Params = std::vector<std::pair<std::string, std::string>>;

  Booster() = default;
  ~Booster() { reset(); }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;

  // Drops the booster.
  void reset();
  // A fresh booster (caching predictions for `cache` when given) with `params` set in order.
  void create(const Matrix* cache, const Params& params);
  void set_params(const Params& params);
  bool exists() const { return handle_ != nullptr; }
  // Boosted rounds so far (0 without a booster).
  int rounds() const;
  // One raw margin (the sum of the trees) per row of `m`, which has `rows` rows.
  std::vector<float> predict(const Matrix& m, size_t rows) const;
  // `rounds` trees grown on `m` (`rows` rows), each fitted to the gradients `objective` gives.
  void boost(const Matrix& m, size_t rows, int rounds, const GradientFn& objective);
  // The trees as XGBoost's JSON model.
  std::string to_json() const;
  // Replaces the trees by those of XGBoost's JSON model `text` (the booster must exist); false with
  // XGBoost's message in `error` when it cannot read them.
  bool load_json(const std::string& text, std::string* error);
  // The columns the trees were grown on.
  uint64_t num_features() const;

 private:
  void* handle_ = nullptr;
};

}  // namespace xgb
}  // namespace tessel
