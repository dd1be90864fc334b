// The BLAS the neural ranker's matrix products go through: OpenBLAS, opened with dlopen on first use
// rather than linked, so that its kernels can be chosen before it loads. OpenBLAS picks its kernels by
// CPU model when it loads; the 0.3.21 of Debian 12 takes a CPU it does not know (the H100 host's Xeon,
// family 6 model 207) for a Prescott and runs SSE3 kernels, 2.5 times slower than its AVX-512 ones
// there. Unless OPENBLAS_CORETYPE is set,
// tessel sets it from the CPU's features for the load (and unsets it after, so that no child process
// inherits it): SkylakeX with AVX-512 (F, BW, DQ, VL), Haswell with AVX2 and FMA, else OpenBLAS's own
// choice. A load that fails throws Error, then and on every later call.
#pragma once

#include <cstddef>
#include <string>

namespace tessel::blas {

// C (m x n) = alpha op(A) op(B) + beta C, every matrix row-major with the given leading dimensions;
// `trans_a` / `trans_b`: A / B stored transposed. Throws Error when OpenBLAS cannot be loaded.
void sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
           int ldb, float beta, float* c, int ldc);
// OpenBLAS's thread count for later products (a process-wide setting).
void set_threads(int threads);
// The kernels OpenBLAS runs ("SkylakeX", "Haswell", ...), loading it if it is not loaded yet: a
// command that will need it calls this first, to fail before its long work rather than after.
std::string core_name();
// The OPENBLAS_CORETYPE tessel sets for this CPU when none is set ("" for OpenBLAS's own choice).
std::string core_for_this_cpu();

}  // namespace tessel::blas
