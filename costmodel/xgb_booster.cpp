// XGBoost's C API behind owning handles: every call checked, its error message kept.
#include "costmodel/xgb_booster.h"

#include <xgboost/c_api.h>

#include <limits>

namespace tessel::xgb {

namespace {

void check(int rc, const char* call) {
  if (rc != 0) throw XGBoostError(std::string("XGBoost: ") + call + " failed: " + XGBGetLastError());
}

}  // namespace

Matrix::Matrix(const std::vector<float>& values, size_t rows, int width) {
  check(XGDMatrixCreateFromMat(values.data(), rows, static_cast<bst_ulong>(width),
                               std::numeric_limits<float>::quiet_NaN(), &handle_),
        "XGDMatrixCreateFromMat");
}

Matrix::~Matrix() { XGDMatrixFree(handle_); }

void Booster::reset() {
  if (handle_) XGBoosterFree(handle_);
  handle_ = nullptr;
}

void Booster::create(const Matrix* cache, const Params& params) {
  reset();
  DMatrixHandle cached = cache ? cache->handle() : nullptr;
  check(XGBoosterCreate(cache ? &cached : nullptr, cache ? 1 : 0, &handle_), "XGBoosterCreate");
  set_params(params);
}

void Booster::set_params(const Params& params) {
  for (const auto& [name, value] : params)
    check(XGBoosterSetParam(handle_, name.c_str(), value.c_str()), "XGBoosterSetParam");
}

int Booster::rounds() const {
  if (!handle_) return 0;
  int rounds = 0;
  check(XGBoosterBoostedRounds(handle_, &rounds), "XGBoosterBoostedRounds");
  return rounds;
}

std::vector<float> Booster::predict(const Matrix& m, size_t rows) const {
  const char* config =
      R"({"type": 1, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  check(XGBoosterPredictFromDMatrix(handle_, m.handle(), config, &shape, &dim, &result), "XGBoosterPredictFromDMatrix");
  return std::vector<float>(result, result + rows);
}

void Booster::boost(const Matrix& m, size_t rows, int rounds, const GradientFn& objective) {
  std::vector<float> grad(rows), hess(rows);
  for (int r = 0; r < rounds; ++r) {
    objective(predict(m, rows), grad, hess);
    check(XGBoosterBoostOneIter(handle_, m.handle(), grad.data(), hess.data(), rows), "XGBoosterBoostOneIter");
  }
}

std::string Booster::to_json() const {
  bst_ulong len = 0;
  const char* buffer = nullptr;
  check(XGBoosterSaveModelToBuffer(handle_, R"({"format": "json"})", &len, &buffer), "XGBoosterSaveModelToBuffer");
  return std::string(buffer, len);
}

bool Booster::load_json(const std::string& text, std::string* error) {
  if (XGBoosterLoadModelFromBuffer(handle_, text.data(), text.size()) == 0) return true;
  *error = XGBGetLastError();
  return false;
}

uint64_t Booster::num_features() const {
  bst_ulong columns = 0;
  check(XGBoosterGetNumFeature(handle_, &columns), "XGBoosterGetNumFeature");
  return columns;
}

}  // namespace tessel::xgb
