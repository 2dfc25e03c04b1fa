// Shared by the fused operators' sources (pfntheory.nn.fused builds every .cpp of this folder
// into one library): torch's vectorised math, the inline base-2 exponential of the kernels, a
// horizontal sum, and the per-instance scratch buffers.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cpu/vec/vec.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

// LAPACK potrf in torch's library, weak (fused_chol_ below)
extern "C" {
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info)
    __attribute__((weak));
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info)
    __attribute__((weak));
}

namespace {

using at::vec::Vectorized;

// 2^w of a float vector, inline (a call into the library's Sleef exp would spill every live vector
// register at each call). The kernels work in base 2 (the log2(e) factor is folded into the scale),
// so w = k + f with k = round(w) and f = w - k exact, |f| <= 1/2; 2^f by a degree-6 polynomial
// (least squares on Chebyshev nodes; below 1e-7 relative in float arithmetic, about one ulp); 2^k
// applied by AVX-512's scalef, else as two exact factors 2^k1 2^k2, so that results below 2^-126
// come out subnormal as exp's do. Inputs are clamped to [-151, 129] (2^w is 0 and inf beyond);
// a NaN propagates.
inline Vectorized<float> pow2i(const Vectorized<float>& k) {  // 2^k for integer k in [-126, 127]
  using V = Vectorized<float>;
  V bits = at::vec::fmadd(k, V(8388608.f), V(127.f * 8388608.f));  // (k + 127) << 23, exact
  return at::vec::cast<float>(at::vec::convert_to_int_of_same_size(bits));
}

template <bool HI>  // HI: clamp from above too (not needed where w <= 0: rbf)
inline Vectorized<float> vexp2(Vectorized<float> w) {
  using V = Vectorized<float>;
  if constexpr (HI)
    w = at::vec::clamp(w, V(-151.f), V(129.f));  // min(hi, max(lo, w)) keeps a NaN w
  else
    w = at::vec::clamp_min(w, V(-151.f));  // max(lo, w) keeps a NaN w
  V k = w.round();
  V f = w - k;
  V p = at::vec::fmadd(V(0.000153707049f), f, V(0.00133998482f));
  p = at::vec::fmadd(p, f, V(0.00961837359f));
  p = at::vec::fmadd(p, f, V(0.0555032901f));
  p = at::vec::fmadd(p, f, V(0.240226477f));
  p = at::vec::fmadd(p, f, V(0.693147182f));
  p = at::vec::fmadd(p, f, V(1.f));
#if defined(CPU_CAPABILITY_AVX512)
  return Vectorized<float>(_mm512_scalef_ps(p, k));
#else
  V k1 = (k * V(0.5f)).floor();
  return p * pow2i(k1) * pow2i(k - k1);
#endif
}

template <bool HI>
inline Vectorized<double> vexp2(const Vectorized<double>& w) {
  return w.exp2();  // Sleef, 1 ulp
}

constexpr double kLog2e = 1.44269504088896340736;

template <typename T>
inline T hsum(const Vectorized<T>& a) {
  alignas(64) T buf[Vectorized<T>::size()];
  a.store(buf);
  T s = 0;
  for (int64_t l = 0; l < Vectorized<T>::size(); ++l) s += buf[l];
  return s;
}

// Per-instance scratch. Backward: keys (d, np) and values (m, np) transposed and zero-padded, d
// factors, the dv block (m, np) and d vector accumulators; forward: the same buffers hold the
// queries (d, tp), the outputs (m, tp) and the keys (n, d).
template <typename T>
struct Scratch {
  std::vector<T> keys, vals, qs, row, aux, aux3, aux4, aux5;  // aux*: rbf at d >= 8
  std::vector<T> tacc;  // forward_sym: per-key vector accumulators
  std::vector<Vectorized<T>> acc;
  // Sized for `rows` rows and `count` vectorised entries, padded to np, a multiple of the vector
  // width: returns np.
  int64_t size(int64_t rows, int64_t count, int64_t d, int64_t m) {
    constexpr int64_t W = Vectorized<T>::size();
    const int64_t np = (count + W - 1) / W * W;
    keys.assign(d * np, T(0));
    vals.assign(m * np, T(0));
    qs.resize(std::max(rows, int64_t(1)) * d);
    row.resize(std::max<int64_t>(m, 1) * np);
    acc.resize(d);
    return np;
  }
};

}  // namespace
