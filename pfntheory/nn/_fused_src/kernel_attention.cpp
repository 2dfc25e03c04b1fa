// Fused kernel attention of one solver layer (pfntheory.nn.fused: the maths, the layout and how
// this file is built and loaded). For every instance b, queries x_i (i < T), keys x_j (j < n),
// diagonal scale s, values v_j (m channels):
//
//   rbf      z_ij = -1/2 sum_k s_k^2 (x_ik - x_jk)^2      softmax  z_ij = sum_k s_k^2 x_ik x_jk
//   P_ij = exp(z_ij),  out_i = sum_j P_ij v_j
//
// backward, with g_i = dL/dout_i and E_ij = P_ij (g_i . v_j):
//   dv_j = sum_i P_ij g_i
//   ds_k = c_k sum_ij E_ij t_ijk,  rbf: t = (x_ik - x_jk)^2, c_k = -s_k;  softmax: t = x_ik x_jk,
//          c_k = 2 s_k
//
// The kernel is formed one vector at a time and consumed at once, so the (T, n) kernel never goes
// to memory. Forward: lanes over queries (a vector of queries outer, keys inner as broadcast
// scalars), the m outputs of the queries in registers, no horizontal sums. Backward: lanes over
// keys (a vector of keys outer, queries inner), the m columns of dv and the d scale sums of the
// key vector in registers. Vectors are zero-padded to a multiple of the vector width: a padded
// query's output is not written back; a padded key has v_j = 0, so it adds nothing to E or ds, and
// its dv is not written back. The exponent is taken in base 2 (log2(e) folded into the scale).
//
// No OpenMP: one instance after another on the calling thread.
//
// Built on these loops, further down: stack_forward / stack_backward, every solver layer of one
// instance in one call (pfntheory.nn.solver; stack_forward_sym, the evaluation's, with each
// context-context kernel entry computed once: forward_sym), and gram and chol_, the rbf Gram
// matrix of the float32 oracle and its Cholesky factor in place (pfntheory.nn.fast_oracle).

#include "stack.h"

namespace {

// out (T, m) of one instance; lanes over queries, so that a query's m sums stay in its lanes and
// need no horizontal reduction. Queries (d, Tp) transposed and zero-padded to Tp, a multiple of the
// vector width; keys (n, d) and values (n, m) are read as broadcast scalars. rbf: queries and keys
// scaled by s sqrt(log2(e) / 2), so that log2 P = -sum_k (a_k - b_k)^2; softmax: queries by
// s log2(e), keys by s, log2 P = sum_k a_k b_k. D, M > 0: compile-time sizes; 0: any (d, m).
template <typename T, int D, int M, bool RBF>
void forward_one(const T* x, const T* s, const T* v, T* out, int64_t Tq, int64_t n, int64_t d_,
                 int64_t m_, Scratch<T>& w) {
  using V = Vectorized<T>;
  constexpr int64_t W = V::size();
  const int64_t d = D > 0 ? D : d_;
  const int64_t m = M > 0 ? M : m_;
  const int64_t tp = w.size(n, Tq, d, m);
  T* qt = w.keys.data();  // (d, tp)
  T* outt = w.vals.data();  // (m, tp)
  T* keys = w.qs.data();  // (n, d)
  const T cq = RBF ? T(std::sqrt(0.5 * kLog2e)) : T(kLog2e), ck = RBF ? cq : T(1);
  for (int64_t i = 0; i < Tq; ++i)
    for (int64_t k = 0; k < d; ++k) qt[k * tp + i] = x[i * d + k] * s[k] * cq;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < d; ++k) keys[j * d + k] = x[j * d + k] * s[k] * ck;
  // rbf at d >= 8 (EX): log2 P = 2 a.b - |a|^2 - |b|^2, clamped at 0 from above as the eager
  // path's expansion is: one FMA per coordinate and entry instead of a difference and an FMA
  constexpr bool EX = RBF && D >= 8 && M > 0;
  static_assert(!EX || D % 2 == 0, "two chains over an even d");
  T* nq = nullptr;
  T* nk = nullptr;
  if constexpr (EX) {
    w.aux.assign(tp, T(0));
    w.aux3.resize(n);
    nq = w.aux.data();
    nk = w.aux3.data();
    for (int64_t i = 0; i < Tq; ++i) {
      T r = 0;
      for (int64_t k = 0; k < D; ++k) r += qt[k * tp + i] * qt[k * tp + i];
      nq[i] = -r;
    }
    for (int64_t j = 0; j < n; ++j) {
      T r = 0;
      for (int64_t k = 0; k < D; ++k) {
        r += keys[j * D + k] * keys[j * D + k];
        keys[j * D + k] *= T(2);
      }
      nk[j] = -r;
    }
  }
  for (int64_t ib = 0; ib < tp; ib += W) {
    if constexpr (EX) {
      V q[D], acc[M];
      for (int64_t k = 0; k < D; ++k) q[k] = V::loadu(qt + k * tp + ib);
      for (int64_t c = 0; c < M; ++c) acc[c] = V(T(0));
      const V nqv = V::loadu(nq + ib);
      for (int64_t j = 0; j < n; ++j) {
        const T* b = keys + j * D;
        V z0 = nqv + V(nk[j]), z1(T(0));  // two chains
        for (int64_t k = 0; k < D; k += 2) {
          z0 = at::vec::fmadd(q[k], V(b[k]), z0);
          z1 = at::vec::fmadd(q[k + 1], V(b[k + 1]), z1);
        }
        V p = vexp2<false>(at::vec::minimum(z0 + z1, V(T(0))));
        for (int64_t c = 0; c < M; ++c) acc[c] = at::vec::fmadd(p, V(v[j * M + c]), acc[c]);
      }
      for (int64_t c = 0; c < M; ++c) acc[c].store(outt + c * tp + ib);
    } else if constexpr (D > 0 && M > 0) {
      V q[D], acc[M];
      for (int64_t k = 0; k < D; ++k) q[k] = V::loadu(qt + k * tp + ib);
      for (int64_t c = 0; c < M; ++c) acc[c] = V(T(0));
      for (int64_t j = 0; j < n; ++j) {
        const T* b = keys + j * D;
        V lp[2] = {V(T(0)), V(T(0))};  // two dependency chains
        for (int64_t k = 0; k < D; ++k) {
          if constexpr (RBF) {
            V diff = q[k] - V(b[k]);
            lp[k % 2] = at::vec::fnmadd(diff, diff, lp[k % 2]);
          } else {
            lp[k % 2] = at::vec::fmadd(q[k], V(b[k]), lp[k % 2]);
          }
        }
        V p = vexp2<!RBF>(lp[0] + lp[1]);
        for (int64_t c = 0; c < M; ++c) acc[c] = at::vec::fmadd(p, V(v[j * M + c]), acc[c]);
      }
      for (int64_t c = 0; c < M; ++c) acc[c].store(outt + c * tp + ib);
    } else {
      for (int64_t c = 0; c < m; ++c) V(T(0)).store(outt + c * tp + ib);
      for (int64_t j = 0; j < n; ++j) {
        const T* b = keys + j * d;
        V lp(T(0));
        for (int64_t k = 0; k < d; ++k) {
          V q = V::loadu(qt + k * tp + ib);
          if constexpr (RBF) {
            V diff = q - V(b[k]);
            lp = at::vec::fnmadd(diff, diff, lp);
          } else {
            lp = at::vec::fmadd(q, V(b[k]), lp);
          }
        }
        V p = vexp2<!RBF>(lp);
        for (int64_t c = 0; c < m; ++c) {
          T* o = outt + c * tp + ib;
          at::vec::fmadd(p, V(v[j * m + c]), V::loadu(o)).store(o);
        }
      }
    }
  }
  for (int64_t i = 0; i < Tq; ++i)
    for (int64_t c = 0; c < m; ++c) out[i * m + c] = outt[c * tp + i];
}

// out (T, m) of one instance for the rbf score, each kernel entry between two context tokens
// computed once (the evaluation's no-autograd stack: pfntheory.nn.fused.evaluation). Context rows
// i < n in blocks I of W lanes (as forward_one); for the keys j of I's own block,
// out_I += P_Ij v_j; for each later key j, the same vector p = P_Ij (lanes over i) also gives
// row j's sum over the keys i in I, P_ji = P_ij: p v_I is added to a vector accumulator of key j
// (tacc, lanes over i), whose lanes are summed once at the end. The query rows (i >= n) take
// lanes over keys. Padded lanes (i >= n) carry v_i = 0 and are not written. Same maths as
// forward_one, another order of summation (so not bitwise its result;
// tests/test_fused_attention.py).
template <typename T, int D, int M>
void forward_sym(const T* x, const T* s, const T* v, T* out, int64_t Tq, int64_t n, int64_t,
                 int64_t, Scratch<T>& w) {
  using V = Vectorized<T>;
  constexpr int64_t W = V::size();
  constexpr bool EX = D >= 8;  // log2 P = 2 a.b - |a|^2 - |b|^2 clamped at 0, as forward_one
  static_assert(!EX || D % 2 == 0, "two chains over an even d");
  const int64_t np = w.size(n, n, D, M);
  T* qt = w.keys.data();  // (D, np) context tokens, scaled, transposed, zero-padded
  T* vt = w.vals.data();  // (M, np) values, transposed, zero-padded
  T* keys = w.qs.data();  // (n, D) scaled (times 2 for EX)
  w.aux.assign(np, T(0));
  T* nq = w.aux.data();  // -|a_i|^2 (EX)
  w.tacc.assign(n * M * W, T(0));
  T* tacc = w.tacc.data();
  w.row.assign(M * np, T(0));
  T* outt = w.row.data();  // (M, np)
  const T cq = T(std::sqrt(0.5 * kLog2e));
  for (int64_t j = 0; j < n; ++j) {
    T r = 0;
    for (int64_t k = 0; k < D; ++k) {
      const T a = x[j * D + k] * s[k] * cq;
      qt[k * np + j] = a;
      keys[j * D + k] = EX ? T(2) * a : a;
      r += a * a;
    }
    nq[j] = -r;
    for (int64_t c = 0; c < M; ++c) vt[c * np + j] = v[j * M + c];
  }
  auto logp = [&](const V* q, const V& nqv, int64_t j) {
    const T* b = keys + j * D;
    if constexpr (EX) {
      V z0 = nqv + V(nq[j]), z1(T(0));
      for (int64_t k = 0; k < D; k += 2) {
        z0 = at::vec::fmadd(q[k], V(b[k]), z0);
        z1 = at::vec::fmadd(q[k + 1], V(b[k + 1]), z1);
      }
      return at::vec::minimum(z0 + z1, V(T(0)));
    } else {
      V lp[2] = {V(T(0)), V(T(0))};
      for (int64_t k = 0; k < D; ++k) {
        V diff = q[k] - V(b[k]);
        lp[k % 2] = at::vec::fnmadd(diff, diff, lp[k % 2]);
      }
      return lp[0] + lp[1];
    }
  };
  for (int64_t ib = 0; ib < n; ib += W) {
    V q[D], acc[M], vI[M];
    for (int64_t k = 0; k < D; ++k) q[k] = V::loadu(qt + k * np + ib);
    for (int64_t c = 0; c < M; ++c) {
      acc[c] = V(T(0));
      vI[c] = V::loadu(vt + c * np + ib);
    }
    const V nqv = V::loadu(nq + ib);
    const int64_t jd = std::min(ib + W, n);
    for (int64_t j = ib; j < jd; ++j) {  // the block's own keys
      V p = vexp2<false>(logp(q, nqv, j));
      for (int64_t c = 0; c < M; ++c) acc[c] = at::vec::fmadd(p, V(v[j * M + c]), acc[c]);
    }
    for (int64_t j = jd; j < n; ++j) {  // later keys: row I and, by symmetry, row j
      V p = vexp2<false>(logp(q, nqv, j));
      T* tj = tacc + j * M * W;
      for (int64_t c = 0; c < M; ++c) {
        acc[c] = at::vec::fmadd(p, V(v[j * M + c]), acc[c]);
        at::vec::fmadd(p, vI[c], V::loadu(tj + c * W)).store(tj + c * W);
      }
    }
    for (int64_t c = 0; c < M; ++c) acc[c].store(outt + c * np + ib);
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < M; ++c)
      out[i * M + c] = outt[c * np + i] + hsum(V::loadu(tacc + (i * M + c) * W));
  for (int64_t i = n; i < Tq; ++i) {  // query rows: lanes over the keys
    T a[D];
    T r = 0;
    for (int64_t k = 0; k < D; ++k) {
      a[k] = x[i * D + k] * s[k] * cq;
      r += a[k] * a[k];
    }
    V acc[M];
    for (int64_t c = 0; c < M; ++c) acc[c] = V(T(0));
    for (int64_t jb = 0; jb < np; jb += W) {
      V z;
      if constexpr (EX) {
        V z0 = V(-r) + V::loadu(nq + jb), z1(T(0));
        for (int64_t k = 0; k < D; k += 2) {
          z0 = at::vec::fmadd(V(T(2) * a[k]), V::loadu(qt + k * np + jb), z0);
          z1 = at::vec::fmadd(V(T(2) * a[k + 1]), V::loadu(qt + (k + 1) * np + jb), z1);
        }
        z = at::vec::minimum(z0 + z1, V(T(0)));
      } else {
        V lp[2] = {V(T(0)), V(T(0))};
        for (int64_t k = 0; k < D; ++k) {
          V diff = V(a[k]) - V::loadu(qt + k * np + jb);
          lp[k % 2] = at::vec::fnmadd(diff, diff, lp[k % 2]);
        }
        z = lp[0] + lp[1];
      }
      V p = vexp2<false>(z);  // padded keys: v = 0 below
      for (int64_t c = 0; c < M; ++c)
        acc[c] = at::vec::fmadd(p, V::loadu(vt + c * np + jb), acc[c]);
    }
    for (int64_t c = 0; c < M; ++c) out[i * M + c] = hsum(acc[c]);
  }
}

// The values v_j (M channels) of a vector of keys and their dv_j accumulators, in registers through
// the backward's loop over queries: the part of that loop the fixed-size paths of backward_one
// share.
template <typename T, int M>
struct KeyValues {
  Vectorized<T> v[M], dv[M];
  KeyValues(const T* vals, int64_t np, int64_t jb) {
    for (int64_t c = 0; c < M; ++c) {
      v[c] = Vectorized<T>::loadu(vals + c * np + jb);
      dv[c] = Vectorized<T>(T(0));
    }
  }
  // Query i with kernel entries p = P_ij: dv_j += P_ij g_i; returns E_ij = P_ij (g_i . v_j).
  inline Vectorized<T> add(const Vectorized<T>& p, const T* gi) {
    using V = Vectorized<T>;
    V gv = V(gi[0]) * v[0];
    for (int64_t c = 1; c < M; ++c) gv = at::vec::fmadd(V(gi[c]), v[c], gv);
    for (int64_t c = 0; c < M; ++c) dv[c] = at::vec::fmadd(p, V(gi[c]), dv[c]);
    return p * gv;
  }
  inline void store(T* row, int64_t np, int64_t jb) const {
    for (int64_t c = 0; c < M; ++c) dv[c].store(row + c * np + jb);
  }
};

// dv (n, m) of one instance and its scale sums sum_ij E_ij t_ijk added to ds (d, double).
// rbf at d >= 8 (EX): sum_ij E_ij (x_ik - x_jk)^2 =
// sum_i x_ik^2 R_i + sum_j x_jk^2 C_j - 2 sum_j x_jk F_jk with R_i = g_i . out_i (out from the
// forward pass), C_j = v_j . dv_j and F_jk = sum_i E_ij x_ik, the eager path's decomposition:
// three vector operations per coordinate and entry instead of four.
template <typename T, int D, int M, bool RBF>
void backward_one(const T* x, const T* s, const T* v, const T* g, const T* o, T* dv, double* ds,
                  int64_t Tq, int64_t n, int64_t d_, int64_t m_, Scratch<T>& w) {
  using V = Vectorized<T>;
  constexpr int64_t W = V::size();
  const int64_t d = D > 0 ? D : d_;
  const int64_t m = M > 0 ? M : m_;
  const int64_t np = w.size(Tq, n, d, m);
  T* keys = w.keys.data();  // x (not scaled): t is needed in x for the scale gradient
  T* vals = w.vals.data();
  T* h = w.qs.data();  // d factors: log2 P = sum_k h_k t_k
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < d; ++k) keys[k * np + j] = x[j * d + k];
    for (int64_t c = 0; c < m; ++c) vals[c * np + j] = v[j * m + c];
  }
  for (int64_t k = 0; k < d; ++k) h[k] = T((RBF ? -0.5 * kLog2e : kLog2e) * s[k] * s[k]);
  constexpr bool EX = RBF && D >= 8;
  static_assert(!EX || D % 2 == 0, "two chains over an even d");
  if constexpr (EX) {
    // queries qa (T, D) and keys ka (D, np, zero-padded) scaled by s sqrt(log2(e) / 2): log2 P =
    // 2 qa.ka - |qa|^2 - |ka|^2 clamped at 0, the forward pass's expansion (the sum below
    // cancels, so P must be the same numbers as there); stored: 2 ka, -|qa_i|^2 (aux4) and
    // -|ka_j|^2 (aux5). The row term sum_i x_ik^2 R_i goes straight into ds.
    w.aux.resize(Tq * D);
    w.aux3.assign(D * np, T(0));
    w.aux4.resize(Tq);
    w.aux5.assign(np, T(0));
    const T c2 = T(std::sqrt(0.5 * kLog2e));
    for (int64_t i = 0; i < Tq; ++i) {
      T r = 0, sq = 0;
      for (int64_t k = 0; k < D; ++k) {
        const T a = x[i * D + k] * s[k] * c2;
        w.aux[i * D + k] = a;
        sq += a * a;
        if (i < n) w.aux3[k * np + i] = T(2) * a;
      }
      w.aux4[i] = -sq;
      if (i < n) w.aux5[i] = -sq;
      for (int64_t c = 0; c < M; ++c) r += g[i * M + c] * o[i * M + c];
      for (int64_t k = 0; k < D; ++k)
        ds[k] += static_cast<double>(x[i * D + k]) * x[i * D + k] * static_cast<double>(r);
    }
  }
  for (int64_t jb = 0; jb < np; jb += W) {
    if constexpr (EX && M > 0) {
      const T* qa = w.aux.data();
      const T* ka = w.aux3.data();
      const V nkv = V::loadu(w.aux5.data() + jb);
      KeyValues<T, M> kv(vals, np, jb);
      V F[D];
      for (int64_t k = 0; k < D; ++k) F[k] = V(T(0));
      for (int64_t i = 0; i < Tq; ++i) {
        const T* xi = x + i * D;
        V z0 = V(w.aux4[i]) + nkv, z1(T(0));  // two chains
        for (int64_t k = 0; k < D; k += 2) {
          z0 = at::vec::fmadd(V(qa[i * D + k]), V::loadu(ka + k * np + jb), z0);
          z1 = at::vec::fmadd(V(qa[i * D + k + 1]), V::loadu(ka + (k + 1) * np + jb), z1);
        }
        V p = vexp2<false>(at::vec::minimum(z0 + z1, V(T(0))));
        V e = kv.add(p, g + i * M);
        for (int64_t k = 0; k < D; ++k) F[k] = at::vec::fmadd(e, V(xi[k]), F[k]);
      }
      V C = kv.v[0] * kv.dv[0];
      for (int64_t c = 1; c < M; ++c) C = at::vec::fmadd(kv.v[c], kv.dv[c], C);
      kv.store(w.row.data(), np, jb);
      for (int64_t k = 0; k < D; ++k) {
        V xj = V::loadu(keys + k * np + jb);
        V u = at::vec::fmadd(V(T(-2)), F[k], xj * C);  // x_jk C_j - 2 F_jk
        ds[k] += static_cast<double>(hsum(xj * u));
      }
    } else if constexpr (D > 0 && M > 0) {
      KeyValues<T, M> kv(vals, np, jb);
      V xj[D], ta[D];
      for (int64_t k = 0; k < D; ++k) {
        xj[k] = V::loadu(keys + k * np + jb);
        ta[k] = V(T(0));
      }
      for (int64_t i = 0; i < Tq; ++i) {
        const T* xi = x + i * D;
        V t[D];
        V z(T(0));
        for (int64_t k = 0; k < D; ++k) {
          if constexpr (RBF) {
            V diff = V(xi[k]) - xj[k];
            t[k] = diff * diff;
          } else {
            t[k] = V(xi[k]) * xj[k];
          }
          z = at::vec::fmadd(V(h[k]), t[k], z);
        }
        V p = vexp2<!RBF>(z);
        V e = kv.add(p, g + i * M);
        for (int64_t k = 0; k < D; ++k) ta[k] = at::vec::fmadd(e, t[k], ta[k]);
      }
      kv.store(w.row.data(), np, jb);
      for (int64_t k = 0; k < D; ++k) ds[k] += static_cast<double>(hsum(ta[k]));
    } else {
      V* ta = w.acc.data();
      T* dvb = w.row.data();
      for (int64_t k = 0; k < d; ++k) ta[k] = V(T(0));
      for (int64_t c = 0; c < m; ++c) V(T(0)).store(dvb + c * np + jb);
      for (int64_t i = 0; i < Tq; ++i) {
        const T* xi = x + i * d;
        const T* gi = g + i * m;
        V z(T(0));
        for (int64_t k = 0; k < d; ++k) {
          V b = V::loadu(keys + k * np + jb);
          V t = RBF ? (V(xi[k]) - b) * (V(xi[k]) - b) : V(xi[k]) * b;
          z = at::vec::fmadd(V(h[k]), t, z);
        }
        V p = vexp2<!RBF>(z);
        V gv(T(0));
        for (int64_t c = 0; c < m; ++c) {
          gv = at::vec::fmadd(V(gi[c]), V::loadu(vals + c * np + jb), gv);
          T* dvc = dvb + c * np + jb;
          at::vec::fmadd(p, V(gi[c]), V::loadu(dvc)).store(dvc);
        }
        V e = p * gv;
        for (int64_t k = 0; k < d; ++k) {
          V b = V::loadu(keys + k * np + jb);
          V t = RBF ? (V(xi[k]) - b) * (V(xi[k]) - b) : V(xi[k]) * b;
          ta[k] = at::vec::fmadd(e, t, ta[k]);
        }
      }
      for (int64_t k = 0; k < d; ++k) ds[k] += static_cast<double>(hsum(ta[k]));
    }
  }
  const T* dvb = w.row.data();
  for (int64_t j = 0; j < n; ++j)
    for (int64_t c = 0; c < m; ++c) dv[j * m + c] = dvb[c * np + j];
}

// G (n, n) of one instance, G_ij = amp 2^(-sum_k (a_ik - a_jk)^2) + noise [i = j] with a = x s
// sqrt(log2(e) / 2), i.e. amp exp(-1/2 sum_k s_k^2 (x_ik - x_jk)^2): the Gram matrix of the
// prior's rbf kernel plus the noise variance (pfntheory.nn.fast_oracle). Lanes over the columns
// j of a row; G_ij and G_ji take the same operations in the same order, so G is exactly symmetric.
// upper: only the entries j >= i (from the vector holding the diagonal on), what chol_ reads; the
// others are left as they were.
template <typename T>
void gram_one(const T* x, const T* s, T amp, T noise, T* G, int64_t n, int64_t d, Scratch<T>& w,
              bool upper) {
  using V = Vectorized<T>;
  constexpr int64_t W = V::size();
  const int64_t np = w.size(1, n, d, 1);  // keys (d, np), zero-padded; qs: one row
  T* keys = w.keys.data();
  T* q = w.qs.data();
  const T c = T(std::sqrt(0.5 * kLog2e));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < d; ++k) keys[k * np + j] = x[j * d + k] * s[k] * c;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < d; ++k) q[k] = x[i * d + k] * s[k] * c;
    T* row = G + i * n;
    for (int64_t jb = upper ? i / W * W : 0; jb < np; jb += W) {
      V z0(T(0)), z1(T(0));  // two chains
      int64_t k = 0;
      for (; k + 1 < d; k += 2) {
        V u0 = V(q[k]) - V::loadu(keys + k * np + jb);
        V u1 = V(q[k + 1]) - V::loadu(keys + (k + 1) * np + jb);
        z0 = at::vec::fnmadd(u0, u0, z0);
        z1 = at::vec::fnmadd(u1, u1, z1);
      }
      if (k < d) {
        V u0 = V(q[k]) - V::loadu(keys + k * np + jb);
        z0 = at::vec::fnmadd(u0, u0, z0);
      }
      V p = vexp2<false>(z0 + z1) * V(amp);
      if (jb + W <= n)
        p.store(row + jb);
      else
        p.store(row + jb, static_cast<int>(n - jb));
    }
    row[i] += noise;
  }
}

// The loops of one (d, m): forward, backward and (rbf, compiled sizes only, else nullptr) the
// symmetric forward. Compile-time (d, m) for the rbf score at the sizes the experiments use;
// anything else (and the softmax score) runs the run-time-size loops.
template <typename T>
struct Fns {
  FwdFn<T> first;
  BwdFn<T> second;
  FwdFn<T> sym;
};

template <typename T, int D>
Fns<T> pick_m(int64_t m) {
  if (m == 2)
    return {forward_one<T, D, 2, true>, backward_one<T, D, 2, true>, forward_sym<T, D, 2>};
  if (m == 3)
    return {forward_one<T, D, 3, true>, backward_one<T, D, 3, true>, forward_sym<T, D, 3>};
  return {forward_one<T, 0, 0, true>, backward_one<T, 0, 0, true>, nullptr};
}

template <typename T>
Fns<T> pick(int64_t d, int64_t m, bool rbf) {
  if (!rbf) return {forward_one<T, 0, 0, false>, backward_one<T, 0, 0, false>, nullptr};
  switch (d) {
    case 1: return pick_m<T, 1>(m);
    case 2: return pick_m<T, 2>(m);
    case 3: return pick_m<T, 3>(m);
    case 4: return pick_m<T, 4>(m);
    case 5: return pick_m<T, 5>(m);
    case 8: return pick_m<T, 8>(m);
    case 16: return pick_m<T, 16>(m);
    default: return {forward_one<T, 0, 0, true>, backward_one<T, 0, 0, true>, nullptr};
  }
}

void check(const at::Tensor& x, const at::Tensor& s, const at::Tensor& v) {
  TORCH_CHECK(x.device().is_cpu() && s.device().is_cpu() && v.device().is_cpu(), "CPU tensors");
  TORCH_CHECK(x.dim() == 3 && s.dim() == 1 && v.dim() == 3, "x (B, T, d), s (d,), v (B, n, m)");
  TORCH_CHECK(x.scalar_type() == s.scalar_type() && x.scalar_type() == v.scalar_type(),
              "x, s, v of one dtype");
  TORCH_CHECK(x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble,
              "float32 or float64");
  TORCH_CHECK(x.is_contiguous() && s.is_contiguous() && v.is_contiguous(), "contiguous");
  TORCH_CHECK(s.size(0) == x.size(2) && v.size(0) == x.size(0) && v.size(1) <= x.size(1),
              "shapes: x (B, T, d), s (d,), v (B, n <= T, m)");
}

template <typename T>
void forward_all(const at::Tensor& x, const at::Tensor& s, const at::Tensor& v, at::Tensor& out,
                 bool rbf, bool sym = false) {
  const int64_t B = x.size(0), Tq = x.size(1), d = x.size(2), n = v.size(1), m = v.size(2);
  const Fns<T> fns = pick<T>(d, m, rbf);
  const FwdFn<T> fn = sym && fns.sym != nullptr ? fns.sym : fns.first;
  Scratch<T> w;
  const T* xp = x.const_data_ptr<T>();
  const T* vp = v.const_data_ptr<T>();
  T* op = out.mutable_data_ptr<T>();
  for (int64_t b = 0; b < B; ++b)
    fn(xp + b * Tq * d, s.const_data_ptr<T>(), vp + b * n * m, op + b * Tq * m, Tq, n, d, m, w);
}

template <typename T>
void backward_all(const at::Tensor& x, const at::Tensor& s, const at::Tensor& v,
                  const at::Tensor& g, const at::Tensor& out, at::Tensor& ds, at::Tensor& dv,
                  bool rbf) {
  const int64_t B = x.size(0), Tq = x.size(1), d = x.size(2), n = v.size(1), m = v.size(2);
  auto fn = pick<T>(d, m, rbf).second;
  Scratch<T> w;
  std::vector<double> acc(d, 0.0);
  const T* xp = x.const_data_ptr<T>();
  const T* vp = v.const_data_ptr<T>();
  const T* gp = g.const_data_ptr<T>();
  const T* op = out.const_data_ptr<T>();
  const T* sp = s.const_data_ptr<T>();
  T* dvp = dv.mutable_data_ptr<T>();
  for (int64_t b = 0; b < B; ++b)
    fn(xp + b * Tq * d, sp, vp + b * n * m, gp + b * Tq * m, op + b * Tq * m, dvp + b * n * m,
       acc.data(), Tq, n, d, m, w);
  T* dsp = ds.mutable_data_ptr<T>();
  for (int64_t k = 0; k < d; ++k)
    dsp[k] = static_cast<T>((rbf ? -1.0 : 2.0) * static_cast<double>(sp[k]) * acc[k]);
}

at::Tensor fused_forward(const at::Tensor& x, const at::Tensor& s, const at::Tensor& v, bool rbf) {
  check(x, s, v);
  at::Tensor out = at::empty({x.size(0), x.size(1), v.size(2)}, x.options());
  if (x.scalar_type() == at::kFloat)
    forward_all<float>(x, s, v, out, rbf);
  else
    forward_all<double>(x, s, v, out, rbf);
  return out;
}

// out = P v for the rbf score with the keys all the tokens (T = n): P symmetric, each entry
// computed once (forward_sym) where (d, m) is compiled (the float32 oracle's float64 residuals).
at::Tensor fused_matvec_sym(const at::Tensor& x, const at::Tensor& s, const at::Tensor& v) {
  check(x, s, v);
  TORCH_CHECK(v.size(1) == x.size(1), "v (B, T, m): a value for every token");
  at::Tensor out = at::empty({x.size(0), x.size(1), v.size(2)}, x.options());
  if (x.scalar_type() == at::kFloat)
    forward_all<float>(x, s, v, out, true, true);
  else
    forward_all<double>(x, s, v, out, true, true);
  return out;
}

std::tuple<at::Tensor, at::Tensor> fused_backward(const at::Tensor& x, const at::Tensor& s,
                                                  const at::Tensor& v, const at::Tensor& g,
                                                  const at::Tensor& out, bool rbf) {
  check(x, s, v);
  for (const at::Tensor* t : {&g, &out})
    TORCH_CHECK(t->is_contiguous() && t->scalar_type() == x.scalar_type() && t->dim() == 3 &&
                    t->size(0) == x.size(0) && t->size(1) == x.size(1) &&
                    t->size(2) == v.size(2),
                "g and out (B, T, m), contiguous, of x's dtype");
  at::Tensor ds = at::empty({x.size(2)}, x.options());
  at::Tensor dv = at::empty(v.sizes(), v.options());
  if (x.scalar_type() == at::kFloat)
    backward_all<float>(x, s, v, g, out, ds, dv, rbf);
  else
    backward_all<double>(x, s, v, g, out, ds, dv, rbf);
  return {ds, dv};
}

at::Tensor fused_gram_impl(const at::Tensor& x, const at::Tensor& s, double amp, double noise,
                           bool upper, const std::optional<at::Tensor>& out = std::nullopt) {
  TORCH_CHECK(x.device().is_cpu() && s.device().is_cpu(), "CPU tensors");
  TORCH_CHECK(x.dim() == 3 && s.dim() == 1 && s.size(0) == x.size(2), "x (B, n, d), s (d,)");
  TORCH_CHECK(x.scalar_type() == s.scalar_type() &&
                  (x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble),
              "x, s float32 or float64, of one dtype");
  TORCH_CHECK(x.is_contiguous() && s.is_contiguous(), "contiguous");
  const int64_t B = x.size(0), n = x.size(1), d = x.size(2);
  at::Tensor G;
  if (out.has_value()) {  // a buffer used again: its pages are not faulted in once more
    G = *out;
    TORCH_CHECK(G.is_contiguous() && G.scalar_type() == x.scalar_type() && G.device().is_cpu() &&
                    G.sizes() == at::IntArrayRef({B, n, n}),
                "out (B, n, n) contiguous, x's dtype");
  } else {
    G = at::empty({B, n, n}, x.options());
  }
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "gram", [&] {
    Scratch<scalar_t> w;
    const scalar_t* xp = x.const_data_ptr<scalar_t>();
    scalar_t* gp = G.mutable_data_ptr<scalar_t>();
    for (int64_t b = 0; b < B; ++b)
      gram_one<scalar_t>(xp + b * n * d, s.const_data_ptr<scalar_t>(), scalar_t(amp),
                         scalar_t(noise), gp + b * n * n, n, d, w, upper);
  });
  return G;
}

at::Tensor fused_gram(const at::Tensor& x, const at::Tensor& s, double amp, double noise) {
  return fused_gram_impl(x, s, amp, noise, false);
}

// The upper triangle only (row-major; the entries below are undefined): what chol_ reads; into
// out when given (then returned).
at::Tensor fused_gram_upper(const at::Tensor& x, const at::Tensor& s, double amp, double noise,
                            const std::optional<at::Tensor>& out) {
  return fused_gram_impl(x, s, amp, noise, true, out);
}

// LAPACK's Cholesky factorisation, the one torch.linalg.cholesky calls (MKL's or OpenBLAS's, in
// torch's own library). Declared weak at the top: a torch built without these symbols still loads
// this extension, and chol_ then refuses (pfntheory.nn.fast_oracle uses torch.linalg.cholesky_ex).
inline void potrf(const char* uplo, const int* n, float* a, int* info) {
  spotrf_(uplo, n, a, n, info);
}
inline void potrf(const char* uplo, const int* n, double* a, int* info) {
  dpotrf_(uplo, n, a, n, info);
}

bool fused_lapack() { return spotrf_ != nullptr && dpotrf_ != nullptr; }

// Cholesky factors in place of A (B, n, n) row-major, by LAPACK's potrf ('L'), as
// torch.linalg.cholesky_ex computes them (A's lower triangle copied into a column-major buffer,
// potrf there), so bitwise its factors; afterwards the buffer read row-major is L^T (A.mT is L,
// with torch's column-major strides) and info per matrix is LAPACK's (0: done; k > 0: the leading
// minor of order k is not positive definite), as cholesky_ex's.
//   chol_ (symmetric A, as gram/gram_upper write it: potrf reads the row-major upper triangle,
//          which for symmetric A is the column-major lower one): potrf on A's buffer itself, then
//          the untouched triangle zeroed;
//   chol_lower_ (any A: its lower triangle): per instance, the lower triangle copied column-major
//          into a scratch in cache, potrf there, the factor written back over A: no second
//          (B, n, n) buffer (pfntheory.nn.priors).
at::Tensor chol_impl(at::Tensor& A, bool copy_lower) {
  TORCH_CHECK(fused_lapack(), "LAPACK potrf is not available in this torch");
  TORCH_CHECK(A.device().is_cpu() && A.is_contiguous() && A.dim() == 3 && A.size(1) == A.size(2),
              "A (B, n, n) contiguous on the CPU");
  TORCH_CHECK(A.scalar_type() == at::kFloat || A.scalar_type() == at::kDouble,
              "float32 or float64");
  const int64_t B = A.size(0), n = A.size(1);
  TORCH_CHECK(n < (int64_t(1) << 31), "n fits LAPACK's int");
  at::Tensor info = at::zeros({B}, A.options().dtype(at::kInt));
  int* ip = info.mutable_data_ptr<int>();
  const int ni = static_cast<int>(n);
  const char uplo = 'L';
  AT_DISPATCH_FLOATING_TYPES(A.scalar_type(), "chol_", [&] {
    using T = scalar_t;
    std::vector<T> cm(copy_lower ? n * n : 0, T(0));  // column-major: cm[i + j n] = A_ij, i >= j
    T* ap = A.mutable_data_ptr<T>();
    for (int64_t b = 0; b < B; ++b) {
      T* a = ap + b * n * n;
      T* f = copy_lower ? cm.data() : a;
      if (copy_lower)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j <= i; ++j) cm[i + j * n] = a[i * n + j];
      if (n > 0) potrf(&uplo, &ni, f, ip + b);
      for (int64_t j = 0; j < n; ++j) {  // row j of L^T: zeros, then L_ij = f[i + j n], i >= j
        std::fill(a + j * n, a + j * n + j, T(0));
        if (copy_lower) std::copy(f + j * n + j, f + (j + 1) * n, a + j * n + j);
      }
    }
  });
  return info;
}

at::Tensor fused_chol_(at::Tensor& A) { return chol_impl(A, false); }
at::Tensor fused_chol_lower_(at::Tensor& A) { return chol_impl(A, true); }

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_stack_forward(
    const at::Tensor& x, const at::Tensor& scales, const at::Tensor& R, const at::Tensor& V,
    const at::Tensor& S, bool rbf, bool norm, bool save) {
  return stack_forward_op(x, scales, R, V, S, norm, save, [&](auto t) {
    return pick<decltype(t)>(x.size(2), norm ? 3 : 2, rbf).first;
  });
}

// The stack's forward pass without autograd for the rbf score, each context-context kernel entry
// computed once (forward_sym) where (d, m) is compiled; H (B, T, 2).
at::Tensor fused_stack_forward_sym(const at::Tensor& x, const at::Tensor& scales,
                                   const at::Tensor& R, const at::Tensor& V, const at::Tensor& S,
                                   bool norm) {
  check_stack(x, scales, R, V, S);
  const int64_t B = x.size(0), Tq = x.size(1), d = x.size(2), n = R.size(1);
  const int64_t layers = scales.size(0), m = norm ? 3 : 2;
  at::Tensor H = at::empty({B, Tq, 2}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "stack_forward_sym", [&] {
    using T = scalar_t;
    const Fns<T> fns = pick<T>(d, m, true);
    const FwdFn<T> fwd = fns.sym != nullptr ? fns.sym : fns.first;
    Scratch<T> w;
    std::vector<T> vals, out1;
    for (int64_t b = 0; b < B; ++b)
      stack_forward_one<T>(x.const_data_ptr<T>() + b * Tq * d, scales.const_data_ptr<T>(),
                           R.const_data_ptr<T>() + b * n * 2, V.const_data_ptr<T>(),
                           S.const_data_ptr<T>(), H.mutable_data_ptr<T>() + b * Tq * 2, nullptr,
                           nullptr, layers, Tq, n, d, norm, fwd, w, vals, out1);
  });
  return H;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_stack_backward(
    const at::Tensor& x, const at::Tensor& scales, const at::Tensor& R, const at::Tensor& V,
    const at::Tensor& S, const at::Tensor& Hs, const at::Tensor& outs, const at::Tensor& gH,
    bool rbf, bool norm) {
  return stack_backward_op(x, scales, R, V, S, Hs, outs, gH, rbf, norm, [&](auto t) {
    return pick<decltype(t)>(x.size(2), norm ? 3 : 2, rbf).second;
  });
}

}  // namespace


TORCH_LIBRARY(pfntheory_fused, m) {
  m.def("forward(Tensor x, Tensor s, Tensor v, bool rbf) -> Tensor");
  m.def(
      "backward(Tensor x, Tensor s, Tensor v, Tensor g, Tensor out, bool rbf) -> (Tensor, Tensor)");
  m.def("gram(Tensor x, Tensor s, float amp, float noise) -> Tensor");
  m.def("gram_upper(Tensor x, Tensor s, float amp, float noise, Tensor? out=None) -> Tensor");
  m.def("chol_(Tensor(a!) A) -> Tensor");
  m.def("chol_lower_(Tensor(a!) A) -> Tensor");
  m.def("matvec_sym(Tensor x, Tensor s, Tensor v) -> Tensor");
  m.def("lapack() -> bool");
  m.def(
      "stack_forward(Tensor x, Tensor scales, Tensor R, Tensor V, Tensor S, bool rbf, bool norm, "
      "bool save) -> (Tensor, Tensor, Tensor)");
  m.def(
      "stack_forward_sym(Tensor x, Tensor scales, Tensor R, Tensor V, Tensor S, bool norm) -> "
      "Tensor");
  m.def(
      "stack_backward(Tensor x, Tensor scales, Tensor R, Tensor V, Tensor S, Tensor Hs, "
      "Tensor outs, Tensor gH, bool rbf, bool norm) -> (Tensor, Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(pfntheory_fused, CPU, m) {
  m.impl("forward", &fused_forward);
  m.impl("backward", &fused_backward);
  m.impl("gram", &fused_gram);
  m.impl("gram_upper", &fused_gram_upper);
  m.impl("chol_", &fused_chol_);
  m.impl("chol_lower_", &fused_chol_lower_);
  m.impl("matvec_sym", &fused_matvec_sym);
  m.impl("stack_forward", &fused_stack_forward);
  m.impl("stack_backward", &fused_stack_backward);
  m.impl("stack_forward_sym", &fused_stack_forward_sym);
}

TORCH_LIBRARY_IMPL(pfntheory_fused, CompositeImplicitAutograd, m) {
  m.impl("lapack", &fused_lapack);
}
