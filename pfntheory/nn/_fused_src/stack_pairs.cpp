// The solver stack's training ops with each context-context rbf kernel entry computed once
// (pfntheory.nn.fused.pairwise): stack_forward_pairs and stack_backward_pairs, the maths of
// stack_forward / stack_backward (stack.h's layer glue; kernel_attention.cpp states the layer's
// maths) in another order of summation, so not bitwise their results.
//
// Between context tokens P_ij = P_ji, so one entry serves both orders: forward out_i += P_ij v_j
// and out_j += P_ij v_i; backward dv_j += P_ij g_i, dv_i += P_ij g_j and (E_ij + E_ji) t_ijk into
// the scale sums, E_ij = P_ij (g_i . v_j), t_ijk = (x_ik - x_jk)^2. Register tiles: lanes over an
// aligned vector J of keys, a block of RB rows i0..i0+RB-1 (broadcast scalars) per pass over J,
// from the vector holding i0 on; the keys' accumulators are loaded and stored once per (row block,
// J), the rows' accumulators stay vectors in registers through the row block's sweep, are stored
// once and their lanes summed at the end (lane_sums). The first vector of a sweep is masked to the
// keys j > i of each row (Masks); P_ii = 1 is added directly. The query rows (i >= n) take lanes
// over the keys, one order only. Padded rows and keys carry v = g = 0 and x = 0: they add nothing
// and are not written. The loops are bound by the multiply/FMA pipes, hence their own exponential
// (pexp2) and the backward's scaled coordinates (docs/speed.md has the measurements).
// Compiled (d, m): d in {1, 2, 3, 4, 5, 8, 16}, m in {2, 3}; the backward for d <= 5 only (pairs_m:
// at d >= 8 the row loops' backward is faster); other sizes run stack_forward / stack_backward
// (rbf) through the dispatcher.

#include <ATen/core/dispatch/Dispatcher.h>

#include "stack.h"

namespace {

// Rows per block: the rows' accumulators (RB M vectors) with, in the forward, the keys' values and
// sums, and in the backward the keys' x, v, g, dv and the scale sums, next to the exponential's
// constants, must fit the 32 vector registers; RB divides the vector width (Masks).
template <int D, int M>
constexpr int fwd_rows() {
  return D <= 5 ? 4 : 2;
}
template <int D, int M>
constexpr int bwd_rows() {  // 2 and 4 measured alike at (a)
  return 2;
}

// out[r] = sum of the W lanes of row r of buf (rows, W), rows a multiple of W: for float under
// AVX-512 a transposing tree (16 rows into one vector: 4 levels of two shuffles and an add), else
// hsum per row.
template <typename T>
void lane_sums(const T* buf, int64_t rows, T* out) {
  constexpr int64_t W = Vectorized<T>::size();
#if defined(CPU_CAPABILITY_AVX512)
  if constexpr (std::is_same_v<T, float>) {
    // level 4 leaves row q + 4 p in lane 4 q + p
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
      const float* b = buf + r0 * 16;
      __m512 s[8], u[4], v[2];
      for (int k = 0; k < 8; ++k) {  // rows 2k, 2k+1: 8 partial sums each
        const __m512 a = _mm512_loadu_ps(b + 32 * k), c = _mm512_loadu_ps(b + 32 * k + 16);
        s[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a, c, 0x44), _mm512_shuffle_f32x4(a, c, 0xEE));
      }
      for (int k = 0; k < 4; ++k)  // rows 4k..4k+3: 4 each, one 128-bit lane per row
        u[k] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * k], s[2 * k + 1], 0x88),
                             _mm512_shuffle_f32x4(s[2 * k], s[2 * k + 1], 0xDD));
      for (int k = 0; k < 2; ++k)  // lane q: rows 8k+q and 8k+4+q, 2 each
        v[k] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * k], u[2 * k + 1], 0x44),
                             _mm512_shuffle_ps(u[2 * k], u[2 * k + 1], 0xEE));
      const __m512 w = _mm512_add_ps(_mm512_shuffle_ps(v[0], v[1], 0x88),
                                     _mm512_shuffle_ps(v[0], v[1], 0xDD));
      _mm512_storeu_ps(out + r0, _mm512_permutexvar_ps(order, w));
    }
    return;
  }
#endif
  for (int64_t r = 0; r < rows; ++r) out[r] = hsum(Vectorized<T>::loadu(buf + r * W));
}

// 2^w of the pairwise loops, w <= 0 (rbf). float under AVX-512: w = k + f, k = round(w), by a
// degree-5 polynomial in f (least squares on Chebyshev nodes: 1.8e-7 relative in float arithmetic,
// against vec.h's degree 6 at 1e-7) and scalef, without vexp2's clamp (scalef takes any k: 2^w
// underflows to 0 as exp does; an infinite token gives NaN); two operations of ten fewer per
// kernel entry. Otherwise vec.h's vexp2.
template <typename T, bool AR = false>
inline Vectorized<T> pexp2(const Vectorized<T>& w) {
#if defined(CPU_CAPABILITY_AVX512)
  if constexpr (std::is_same_v<T, float>) {
    using V = Vectorized<float>;
    // AR: k rounded by two additions of 1.5 2^23 (the add pipes; exact for |w| < 2^22, and
    // below that 2^w is 0 either way), else by vrndscale: the backward measured faster with AR,
    // the forward without
    const V k = AR ? (w + V(12582912.f)) - V(12582912.f) : w.round();
    const V f = w - k;
    V p = at::vec::fmadd(V(0.00132186722f), f, V(0.00967169832f));
    p = at::vec::fmadd(p, f, V(0.0555089302f));
    p = at::vec::fmadd(p, f, V(0.240222380f));
    p = at::vec::fmadd(p, f, V(0.693146884f));
    p = at::vec::fmadd(p, f, V(1.f));
    return V(_mm512_scalef_ps(p, k));
  }
#endif
  return vexp2<false>(w);
}

// Terms added to a row's log-kernel vector: after[o], o < W: 0 on the lanes l > o, else -4096
// (2^-4096 is 0 in float and double), row i = jb + o against the keys jb + l of the aligned vector
// holding it; after[W + t]: 0 (later vectors). Added to the exponent, the mask costs no operation
// of the multiply pipes (the loops' bound).
template <typename T, int RB>
struct Masks {
  static constexpr int W = Vectorized<T>::size();
  Vectorized<T> after[W + RB];
  Masks() {
    const Vectorized<T> lane = Vectorized<T>::arange(T(0), T(1));
    for (int o = 0; o < W; ++o)
      after[o] = (lane.le(Vectorized<T>(T(o)))) * Vectorized<T>(T(-4096));
    for (int t = 0; t < RB; ++t) after[W + t] = Vectorized<T>(T(0));
  }
};

// out (T, m) of one instance: the forward loop of stack_forward_pairs (FwdFn). Tokens scaled by
// s sqrt(log2(e) / 2), log2 P_ij = -|a_i - a_j|^2; at d >= 8 (EX) 2 a_i.a_j - |a_i|^2 - |a_j|^2
// clamped at 0, as forward_one takes it.
template <typename T, int D, int M>
void forward_pairs(const T* x, const T* s, const T* v, T* out, int64_t Tq, int64_t n, int64_t,
                   int64_t, Scratch<T>& w) {
  using V = Vectorized<T>;
  constexpr int64_t W = V::size();
  constexpr int RB = fwd_rows<D, M>();
  constexpr bool KREG = D <= 5;  // the key vector's coordinates in registers, else loaded per use
  static_assert(W % RB == 0, "a row block within one vector of keys");
  constexpr bool EX = D >= 8;
  static_assert(!EX || D % 2 == 0, "two chains over an even d");
  const int64_t nr = (n + RB - 1) / RB * RB;
  const int64_t np = w.size(nr, n + W, D, M);  // a vector from any key i < n on
  T* kt = w.keys.data();  // (D, np) scaled tokens, transposed, zero-padded
  T* vt = w.vals.data();  // (M, np) values, transposed, zero-padded
  w.qs.assign(EX ? nr * D : 0, T(0));
  T* kr = w.qs.data();  // EX: (nr, D) scaled rows times 2, zero-padded
  w.aux.assign(np, T(0));
  T* nq = w.aux.data();  // -|a_j|^2 (EX)
  w.row.assign(M * np, T(0));
  T* kacc = w.row.data();  // (M, np) the keys' sums over earlier rows
  const int64_t nw = (nr * M + W - 1) / W * W;
  w.tacc.resize(nw * W);
  T* rvec = w.tacc.data();  // (n M, W) the rows' vector sums over later keys
  w.aux4.resize(nw);
  T* rsum = w.aux4.data();  // (n, M) their lanes summed
  T cs[D];  // s_k sqrt(log2(e) / 2)
  for (int k = 0; k < D; ++k) cs[k] = s[k] * T(std::sqrt(0.5 * kLog2e));
  // transposed one coordinate (channel) at a time: strided loops the compiler vectorises
  for (int k = 0; k < D; ++k)
    for (int64_t j = 0; j < n; ++j) kt[k * np + j] = x[j * D + k] * cs[k];
  for (int c = 0; c < M; ++c)
    for (int64_t j = 0; j < n; ++j) vt[c * np + j] = v[j * M + c];
  if constexpr (EX) {
    for (int64_t j = 0; j < n; ++j) {
      T r = 0;
      for (int k = 0; k < D; ++k) {
        const T a = kt[k * np + j];
        kr[j * D + k] = T(2) * a;
        r += a * a;
      }
      nq[j] = -r;
    }
  }
  const Masks<T, RB> masks;
  for (int64_t i0 = 0; i0 < n; i0 += RB) {
    V racc[RB][M];
#pragma GCC unroll 16
    for (int t = 0; t < RB; ++t)
#pragma GCC unroll 16
      for (int c = 0; c < M; ++c) racc[t][c] = V(T(0));
    // aligned vectors of keys: the keys' sums load what the last sweep stored there (no lambda
    // here: the rows' accumulators must stay registers)
    const int64_t jb0 = i0 / W * W;
    for (int64_t jb = jb0; jb < n; jb += W) {
      // the first vector: lanes j > i only (masks); then none masked
      const V* mk = jb == jb0 ? masks.after + (i0 - jb0) : masks.after + W;
      V kJ[KREG ? D : 1], vJ[M], aJ[M];
      if constexpr (KREG)
        for (int k = 0; k < D; ++k) kJ[k] = V::loadu(kt + k * np + jb);
      auto key = [&](int k) { return KREG ? kJ[k] : V::loadu(kt + k * np + jb); };
      for (int c = 0; c < M; ++c) {
        vJ[c] = V::loadu(vt + c * np + jb);
        aJ[c] = V::loadu(kacc + c * np + jb);
      }
      const V nk = V::loadu(nq + jb);
#pragma GCC unroll 16
      for (int t = 0; t < RB; ++t) {
        const int64_t i = i0 + t;  // a row's scalars: broadcasts from the transposed buffers
        V z;
        if constexpr (EX) {
          V z0 = nk + V(nq[i0 + t]), z1(T(0));  // padded rows: nq 0 beyond n
          for (int k = 0; k < D; k += 2) {
            z0 = at::vec::fmadd(V(kr[i * D + k]), key(k), z0);
            z1 = at::vec::fmadd(V(kr[i * D + k + 1]), key(k + 1), z1);
          }
          z = at::vec::minimum(z0 + z1, V(T(0))) + mk[t];
        } else {  // one chain: the RB rows are independent
          V diff = V(kt[i]) - key(0);
          z = at::vec::fnmadd(diff, diff, mk[t]);
          for (int k = 1; k < D; ++k) {
            diff = V(kt[k * np + i]) - key(k);
            z = at::vec::fnmadd(diff, diff, z);
          }
        }
        const V p = pexp2(z);
        for (int c = 0; c < M; ++c) {
          racc[t][c] = at::vec::fmadd(p, vJ[c], racc[t][c]);
          aJ[c] = at::vec::fmadd(p, V(vt[c * np + i]), aJ[c]);
        }
      }
      for (int c = 0; c < M; ++c) aJ[c].store(kacc + c * np + jb);
    }
    T* rv = rvec + i0 * M * W;  // padded rows too: a fixed count keeps racc in registers
#pragma GCC unroll 16
    for (int t = 0; t < RB; ++t)
#pragma GCC unroll 16
      for (int c = 0; c < M; ++c) racc[t][c].store(rv + (t * M + c) * W);
  }
  lane_sums(rvec, nw, rsum);
  for (int64_t i = 0; i < n; ++i)  // P_ii = 1
    for (int64_t c = 0; c < M; ++c)
      out[i * M + c] = (rsum[i * M + c] + kacc[c * np + i]) + v[i * M + c];
  for (int64_t i = n; i < Tq; ++i) {  // query rows: lanes over the keys
    T a[D];
    T r = 0;
    for (int64_t k = 0; k < D; ++k) {
      a[k] = x[i * D + k] * cs[k];
      r += a[k] * a[k];
    }
    V acc[M];
    for (int c = 0; c < M; ++c) acc[c] = V(T(0));
    for (int64_t jb = 0; jb < n; jb += W) {
      V z;
      if constexpr (EX) {
        V z0 = V(-r) + V::loadu(nq + jb), z1(T(0));
        for (int k = 0; k < D; k += 2) {
          z0 = at::vec::fmadd(V(T(2) * a[k]), V::loadu(kt + k * np + jb), z0);
          z1 = at::vec::fmadd(V(T(2) * a[k + 1]), V::loadu(kt + (k + 1) * np + jb), z1);
        }
        z = at::vec::minimum(z0 + z1, V(T(0)));
      } else {
        V lp[2] = {V(T(0)), V(T(0))};
        for (int k = 0; k < D; ++k) {
          V diff = V(a[k]) - V::loadu(kt + k * np + jb);
          lp[k % 2] = at::vec::fnmadd(diff, diff, lp[k % 2]);
        }
        z = lp[0] + lp[1];
      }
      V p = pexp2(z);  // padded keys: v = 0 below
      for (int c = 0; c < M; ++c) acc[c] = at::vec::fmadd(p, V::loadu(vt + c * np + jb), acc[c]);
    }
    for (int c = 0; c < M; ++c) out[i * M + c] = hsum(acc[c]);
  }
}

// dv (n, m) of one instance and its scale sums sum_ij E_ij t_ijk added to ds (d, double): the
// backward loop of stack_backward_pairs (BwdFn; the forward's out is not needed). Tokens scaled by
// c_k = |s_k| sqrt(log2(e) / 2): log2 P = -sum_k u_k, u_k = c_k^2 t_k (subtractions, no
// multiply), and the sums of E u_k divided by c_k^2 at the end (0 where s_k = 0: there ds_k = 0).
template <typename T, int D, int M>
void backward_pairs(const T* x, const T* s, const T* v, const T* g, const T*, T* dv, double* ds,
                    int64_t Tq, int64_t n, int64_t, int64_t, Scratch<T>& w) {
  using V = Vectorized<T>;
  constexpr int64_t W = V::size();
  constexpr int RB = bwd_rows<D, M>();
  static_assert(D <= 5, "d >= 8: the row loops' backward (pairs_m)");
  static_assert(W % RB == 0, "a row block within one vector of keys");
  const int64_t nr = (n + RB - 1) / RB * RB;
  const int64_t np = w.size(nr, n + W, D, M);
  T* xt = w.keys.data();  // (D, np) tokens, transposed, zero-padded
  T* vt = w.vals.data();  // (M, np) values
  w.aux5.assign(M * np, T(0));
  T* gt = w.aux5.data();  // (M, np) output gradients of the context rows
  w.row.assign(M * np, T(0));
  T* dacc = w.row.data();  // (M, np) the keys' dv over earlier rows and the query rows
  const int64_t nw = (nr * M + W - 1) / W * W;
  w.tacc.resize(nw * W);
  T* rvec = w.tacc.data();  // (n M, W) the rows' vector dv over later keys
  w.aux4.resize(nw);
  T* rsum = w.aux4.data();  // (n, M) their lanes summed
  T cs[D];
  for (int k = 0; k < D; ++k) cs[k] = T(std::abs(s[k]) * std::sqrt(0.5 * kLog2e));
  for (int k = 0; k < D; ++k)  // one coordinate (channel) at a time: vectorised strided loops
    for (int64_t j = 0; j < n; ++j) xt[k * np + j] = x[j * D + k] * cs[k];
  for (int c = 0; c < M; ++c)
    for (int64_t j = 0; j < n; ++j) {
      vt[c * np + j] = v[j * M + c];
      gt[c * np + j] = g[j * M + c];
    }
  double dsw[D][W] = {};  // the scale sums' lanes, in double
  auto flush = [&](V tk, int k) {  // by value: ta stays registers
    alignas(64) T buf[W];
    tk.store(buf);
    for (int64_t l = 0; l < W; ++l) dsw[k][l] += static_cast<double>(buf[l]);
  };
  const Masks<T, RB> masks;
  V ta[D];  // the scale sums, flushed to double every 8 row blocks (at most ~60 terms a lane)
  for (int k = 0; k < D; ++k) ta[k] = V(T(0));
  for (int64_t i0 = 0; i0 < n; i0 += RB) {
    V racc[RB][M];
#pragma GCC unroll 16
    for (int t = 0; t < RB; ++t)
#pragma GCC unroll 16
      for (int c = 0; c < M; ++c) racc[t][c] = V(T(0));
    // aligned vectors of keys: the keys' sums load what the last sweep stored there (no lambda
    // here: the rows' accumulators must stay registers)
    const int64_t jb0 = i0 / W * W;
    for (int64_t jb = jb0; jb < n; jb += W) {
      // the first vector: lanes j > i only (masks); then none masked
      const V* mk = jb == jb0 ? masks.after + (i0 - jb0) : masks.after + W;
      V xJ[D], vJ[M], gJ[M], dJ[M];
      for (int k = 0; k < D; ++k) xJ[k] = V::loadu(xt + k * np + jb);
      for (int c = 0; c < M; ++c) {
        vJ[c] = V::loadu(vt + c * np + jb);
        gJ[c] = V::loadu(gt + c * np + jb);
        dJ[c] = V::loadu(dacc + c * np + jb);
      }
#pragma GCC unroll 16
      for (int t = 0; t < RB; ++t) {
        const int64_t i = i0 + t;  // a row's scalars: broadcasts from the transposed buffers
        V tk[D], z;
        for (int k = 0; k < D; ++k) {
          const V diff = V(xt[k * np + i]) - xJ[k];
          tk[k] = diff * diff;
          z = (k == 0 ? mk[t] : z) - tk[k];
        }
        const V p = pexp2<T, true>(z);
        V gv = V(gt[i]) * vJ[0];  // g_i . v_j + g_j . v_i
        for (int c = 1; c < M; ++c) gv = at::vec::fmadd(V(gt[c * np + i]), vJ[c], gv);
        for (int c = 0; c < M; ++c) gv = at::vec::fmadd(gJ[c], V(vt[c * np + i]), gv);
        const V e = p * gv;
        for (int c = 0; c < M; ++c) {
          dJ[c] = at::vec::fmadd(p, V(gt[c * np + i]), dJ[c]);
          racc[t][c] = at::vec::fmadd(p, gJ[c], racc[t][c]);
        }
        for (int k = 0; k < D; ++k) ta[k] = at::vec::fmadd(e, tk[k], ta[k]);
      }
      for (int c = 0; c < M; ++c) dJ[c].store(dacc + c * np + jb);
    }
    T* rv = rvec + i0 * M * W;  // padded rows too: a fixed count keeps racc in registers
#pragma GCC unroll 16
    for (int t = 0; t < RB; ++t)
#pragma GCC unroll 16
      for (int c = 0; c < M; ++c) racc[t][c].store(rv + (t * M + c) * W);
    if (i0 / RB % 8 == 7 || i0 + RB >= n) {
      for (int k = 0; k < D; ++k) {
        flush(ta[k], k);
        ta[k] = V(T(0));
      }
    }
  }
  lane_sums(rvec, nw, rsum);
  for (int64_t i = n; i < Tq; ++i) {  // query rows: lanes over the keys, dv_j += P_ij g_i
    T xi[D];
    for (int k = 0; k < D; ++k) xi[k] = x[i * D + k] * cs[k];
    const T* gi = g + i * M;
    V ta[D];
    for (int k = 0; k < D; ++k) ta[k] = V(T(0));
    for (int64_t jb = 0; jb < n; jb += W) {
      V tk[D], z;
      for (int k = 0; k < D; ++k) {
        V diff = V(xi[k]) - V::loadu(xt + k * np + jb);
        tk[k] = diff * diff;
        z = k == 0 ? V(T(0)) - tk[0] : z - tk[k];
      }
      V p = pexp2<T, true>(z);
      V gv(T(0));
      for (int c = 0; c < M; ++c) {
        T* dc = dacc + c * np + jb;
        const V vc = V::loadu(vt + c * np + jb);  // padded keys: 0, so no E
        gv = at::vec::fmadd(V(gi[c]), vc, gv);
        at::vec::fmadd(p, V(gi[c]), V::loadu(dc)).store(dc);
      }
      const V e = p * gv;
      for (int k = 0; k < D; ++k) ta[k] = at::vec::fmadd(e, tk[k], ta[k]);
    }
    for (int k = 0; k < D; ++k) flush(ta[k], k);
  }
  for (int64_t j = 0; j < n; ++j)  // P_jj = 1
    for (int64_t c = 0; c < M; ++c)
      dv[j * M + c] = (rsum[j * M + c] + dacc[c * np + j]) + g[j * M + c];
  for (int k = 0; k < D; ++k) {
    double r = 0;
    for (int64_t l = 0; l < W; ++l) r += dsw[k][l];
    const double c2 = static_cast<double>(cs[k]) * cs[k];
    if (c2 > 0) ds[k] += r / c2;
  }
}

template <typename T>
struct PairFns {
  FwdFn<T> fwd;
  BwdFn<T> bwd;
};

template <typename T, int D>
PairFns<T> pairs_m(int64_t m) {
  // d >= 8: the forward only; the row loops' backward (its expansion of the distance, 2 d
  // multiplies per entry) beats the pairwise one there, whose d scale sums do not fit the
  // registers beside the tile (measured at (b): 0.78x; docs/speed.md)
  if constexpr (D <= 5) {
    if (m == 2) return {forward_pairs<T, D, 2>, backward_pairs<T, D, 2>};
    if (m == 3) return {forward_pairs<T, D, 3>, backward_pairs<T, D, 3>};
  } else {
    if (m == 2) return {forward_pairs<T, D, 2>, nullptr};
    if (m == 3) return {forward_pairs<T, D, 3>, nullptr};
  }
  return {nullptr, nullptr};
}

// The compiled pairwise loops of (d, m), else nullptrs.
template <typename T>
PairFns<T> pairs_pick(int64_t d, int64_t m) {
  switch (d) {
    case 1: return pairs_m<T, 1>(m);
    case 2: return pairs_m<T, 2>(m);
    case 3: return pairs_m<T, 3>(m);
    case 4: return pairs_m<T, 4>(m);
    case 5: return pairs_m<T, 5>(m);
    case 8: return pairs_m<T, 8>(m);
    case 16: return pairs_m<T, 16>(m);
    default: return {nullptr, nullptr};
  }
}

bool pairs_compiled(const at::Tensor& x, bool norm, bool backward) {
  const PairFns<float> f = pairs_pick<float>(x.dim() == 3 ? x.size(2) : 0, norm ? 3 : 2);
  return backward ? f.bwd != nullptr : f.fwd != nullptr;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_stack_forward_pairs(
    const at::Tensor& x, const at::Tensor& scales, const at::Tensor& R, const at::Tensor& V,
    const at::Tensor& S, bool norm, bool save) {
  if (!pairs_compiled(x, norm, false)) {  // the row loops
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("pfntheory_fused::stack_forward", "")
                         .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                             const at::Tensor&, const at::Tensor&, const at::Tensor&,
                             const at::Tensor&, const at::Tensor&, bool, bool, bool)>();
    return op.call(x, scales, R, V, S, true, norm, save);
  }
  return stack_forward_op(x, scales, R, V, S, norm, save, [&](auto t) {
    return pairs_pick<decltype(t)>(x.size(2), norm ? 3 : 2).fwd;
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_stack_backward_pairs(
    const at::Tensor& x, const at::Tensor& scales, const at::Tensor& R, const at::Tensor& V,
    const at::Tensor& S, const at::Tensor& Hs, const at::Tensor& outs, const at::Tensor& gH,
    bool norm) {
  if (!pairs_compiled(x, norm, true)) {  // the row loops, on the pairwise forward's saved state
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("pfntheory_fused::stack_backward", "")
                         .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
                             const at::Tensor&, const at::Tensor&, const at::Tensor&,
                             const at::Tensor&, const at::Tensor&, const at::Tensor&,
                             const at::Tensor&, const at::Tensor&, bool, bool)>();
    return op.call(x, scales, R, V, S, Hs, outs, gH, true, norm);
  }
  return stack_backward_op(x, scales, R, V, S, Hs, outs, gH, true, norm, [&](auto t) {
    return pairs_pick<decltype(t)>(x.size(2), norm ? 3 : 2).bwd;
  });
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(pfntheory_fused, m) {
  m.def(
      "stack_forward_pairs(Tensor x, Tensor scales, Tensor R, Tensor V, Tensor S, bool norm, "
      "bool save) -> (Tensor, Tensor, Tensor)");
  m.def(
      "stack_backward_pairs(Tensor x, Tensor scales, Tensor R, Tensor V, Tensor S, Tensor Hs, "
      "Tensor outs, Tensor gH, bool norm) -> (Tensor, Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(pfntheory_fused, CPU, m) {
  m.impl("stack_forward_pairs", &fused_stack_forward_pairs);
  m.impl("stack_backward_pairs", &fused_stack_backward_pairs);
}
