// Helpers shared by the codegen tests: 64-byte aligned host buffers and short IR builders.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codegen/llvm/llvm_backend.h"

namespace tessel::testing {

// A 64-byte aligned array, as generated kernels require of their arguments.
template <typename T>
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t n, T fill = T{}) : n_(n) {
    size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    data_ = static_cast<T*>(std::aligned_alloc(64, bytes > 0 ? bytes : 64));
    for (size_t i = 0; i < n; ++i) data_[i] = fill;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }
  T* data() { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  size_t size() const { return n_; }

 private:
  T* data_;
  size_t n_;
};

inline BufferParam param(const std::string& name, DType dtype, int64_t n, bool is_output = false) {
  return BufferParam{name, dtype, {n}, is_output};
}

inline Expr var(const std::string& name) { return make_var(name, kInt64); }
inline Expr fload(const std::string& buffer, Expr index) {
  return make_load(buffer, index, Type{DType::Float32, index->type.lanes});
}
inline Expr iload(const std::string& buffer, Expr index) {
  return make_load(buffer, index, Type{DType::Int64, index->type.lanes});
}
inline Stmt serial(const std::string& v, int64_t extent, Stmt body, ForKind kind = ForKind::Serial) {
  return make_for(v, make_int(0), make_int(extent), kind, std::move(body));
}

}  // namespace tessel::testing
