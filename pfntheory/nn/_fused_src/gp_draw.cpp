// The function-space draw of one rbf Gaussian-process prior and its exact PPD at the query, for a
// batch of instances, in float64 (pfntheory.nn.priors: the opt-in fast draw of training batches,
// RunSpec.fast_numerics). Per instance b, with G_ij = amp exp(-1/2 sum_k f_k^2 (x_ik - x_jk)^2):
//
//   L = chol(G + noise I)   Y = L z   k_i = amp exp(-1/2 sum_k f_k^2 (x_ik - xq_k)^2)
//   v = L^-1 k              mu = v . z (= k^T (G + noise I)^-1 Y)   tau = amp + noise - v . v
//
// the same maths as pfntheory.nn.priors._gp_oracle for one rbf component, another rounding:
// the instances go W at a time (W = the float64 vector width), one instance per lane, so every
// scalar step of the textbook algorithms is one vector operation and nothing needs a horizontal
// sum. The lower triangle of a group's Gram matrix is packed row by row, interleaved by lane
// (entry (i, j), j <= i, of lane l at ((i (i + 1) / 2 + j) W + l)): n (n + 1) / 2 W doubles, in
// the core's L2 cache for n up to ~180. The factor is the row-oriented
// (Cholesky-Banachiewicz) recursion L_ij = (A_ij - sum_{k<j} L_ik L_jk) / L_jj, four columns of a
// row at a time (each L_ik loaded once for four products); Y and v are formed row by row after
// it. A lane whose pivot is not positive (or NaN) gets info = its leading minor's order (as
// LAPACK's potrf reports it), and its factor goes on with pivot 1 so that the other lanes are
// unaffected. Padded lanes (B not a multiple of W) repeat the group's first instance and are not
// written. Used up to priors.FAST_DRAW_MAX_N = 512 (measured faster than the exact path there).

#include "vec.h"

namespace {

using VD = Vectorized<double>;
constexpr int64_t WD = VD::size();

// One group of W instances starting at b0 (nb <= W of them real).
void draw_group(const double* X, const double* xq, const double* z, const double* f, double amp,
                double noise, double* Y, double* mu, double* tau, int* info, int64_t b0,
                int64_t nb, int64_t n, int64_t d, std::vector<double>& A, std::vector<double>& xs,
                std::vector<double>& zs, std::vector<double>& rd, std::vector<double>& vv) {
  auto lane_b = [&](int64_t l) { return b0 + (l < nb ? l : 0); };
  // the scaled inputs a = x f, interleaved: xs[(i d + k) W + l], row n the query
  for (int64_t l = 0; l < WD; ++l) {
    const int64_t b = lane_b(l);
    for (int64_t i = 0; i <= n; ++i)
      for (int64_t k = 0; k < d; ++k) {
        const double x = i < n ? X[(b * n + i) * d + k] : xq[b * d + k];
        xs[(i * d + k) * WD + l] = x * f[k];
      }
    for (int64_t i = 0; i < n; ++i) zs[i * WD + l] = z[b * n + i];
  }
  const VD half(-0.5), va(amp), vn(noise);
  auto kern = [&](int64_t i, int64_t j) {  // amp exp(-1/2 |a_i - a_j|^2), lanes over instances
    VD r(0.0);
    for (int64_t k = 0; k < d; ++k) {
      const VD diff = VD::loadu(&xs[(i * d + k) * WD]) - VD::loadu(&xs[(j * d + k) * WD]);
      r = at::vec::fmadd(diff, diff, r);
    }
    return va * (half * r).exp();
  };
  // Gram matrix (lower triangle, packed) and its factor, row by row
  for (int64_t i = 0; i < n; ++i) {
    double* Ai = &A[(i * (i + 1) / 2) * WD];
    for (int64_t j = 0; j < i; ++j) kern(i, j).store(Ai + j * WD);
    (kern(i, i) + vn).store(Ai + i * WD);
    int64_t j = 0;
    // four columns at a time: each L_ik loaded once for four products (5 loads per 4 FMAs)
    for (; j + 4 <= i; j += 4) {
      const double* Aj[4];
      VD s[4];
      for (int t = 0; t < 4; ++t) {
        Aj[t] = &A[((j + t) * (j + t + 1) / 2) * WD];
        s[t] = VD::loadu(Ai + (j + t) * WD);
      }
      for (int64_t k = 0; k < j; ++k) {
        const VD a = VD::loadu(Ai + k * WD);
        for (int t = 0; t < 4; ++t) s[t] = at::vec::fnmadd(a, VD::loadu(Aj[t] + k * WD), s[t]);
      }
      for (int t = 0; t < 4; ++t) {  // the block's own triangle
        for (int u = 0; u < t; ++u)
          s[t] = at::vec::fnmadd(VD::loadu(Ai + (j + u) * WD), VD::loadu(Aj[t] + (j + u) * WD),
                                 s[t]);
        (s[t] * VD::loadu(&rd[(j + t) * WD])).store(Ai + (j + t) * WD);
      }
    }
    for (; j <= i; ++j) {
      const double* Aj = &A[(j * (j + 1) / 2) * WD];
      VD s0 = VD::loadu(Ai + j * WD), s1(0.0);
      int64_t k = 0;
      for (; k + 1 < j; k += 2) {
        s0 = at::vec::fnmadd(VD::loadu(Ai + k * WD), VD::loadu(Aj + k * WD), s0);
        s1 = at::vec::fnmadd(VD::loadu(Ai + (k + 1) * WD), VD::loadu(Aj + (k + 1) * WD), s1);
      }
      if (k < j) s0 = at::vec::fnmadd(VD::loadu(Ai + k * WD), VD::loadu(Aj + k * WD), s0);
      const VD s = s0 + s1;
      if (j < i) {
        (s * VD::loadu(&rd[j * WD])).store(Ai + j * WD);
      } else {
        alignas(64) double sl[WD];
        s.store(sl);
        for (int64_t l = 0; l < WD; ++l)
          if (!(sl[l] > 0.0)) {  // not positive, or NaN
            if (l < nb && info[b0 + l] == 0) info[b0 + l] = static_cast<int>(i + 1);
            sl[l] = 1.0;
          }
        const VD piv = VD::loadu(sl).sqrt();
        piv.store(Ai + i * WD);
        (VD(1.0) / piv).store(&rd[i * WD]);
      }
    }
  }
  // Y = L z and v = L^-1 k, row by row; mu = v . z, tau = amp + noise - v . v
  VD mus(0.0), vvs(0.0);
  for (int64_t i = 0; i < n; ++i) {
    const double* Ai = &A[(i * (i + 1) / 2) * WD];
    VD y0(0.0), y1(0.0), t0 = kern(i, n), t1(0.0);
    int64_t k = 0;
    for (; k + 1 < i; k += 2) {
      y0 = at::vec::fmadd(VD::loadu(Ai + k * WD), VD::loadu(&zs[k * WD]), y0);
      y1 = at::vec::fmadd(VD::loadu(Ai + (k + 1) * WD), VD::loadu(&zs[(k + 1) * WD]), y1);
      t0 = at::vec::fnmadd(VD::loadu(Ai + k * WD), VD::loadu(&vv[k * WD]), t0);
      t1 = at::vec::fnmadd(VD::loadu(Ai + (k + 1) * WD), VD::loadu(&vv[(k + 1) * WD]), t1);
    }
    if (k < i) {
      y0 = at::vec::fmadd(VD::loadu(Ai + k * WD), VD::loadu(&zs[k * WD]), y0);
      t0 = at::vec::fnmadd(VD::loadu(Ai + k * WD), VD::loadu(&vv[k * WD]), t0);
    }
    const VD zi = VD::loadu(&zs[i * WD]);
    const VD yi = at::vec::fmadd(VD::loadu(Ai + i * WD), zi, y0 + y1);
    const VD vi = (t0 + t1) * VD::loadu(&rd[i * WD]);
    vi.store(&vv[i * WD]);
    mus = at::vec::fmadd(vi, zi, mus);
    vvs = at::vec::fmadd(vi, vi, vvs);
    alignas(64) double yl[WD];
    yi.store(yl);
    for (int64_t l = 0; l < nb; ++l) Y[(b0 + l) * n + i] = yl[l];
  }
  alignas(64) double ml[WD], tl[WD];
  mus.store(ml);
  (VD(amp + noise) - vvs).store(tl);
  for (int64_t l = 0; l < nb; ++l) {
    mu[b0 + l] = ml[l];
    tau[b0 + l] = tl[l];
  }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gp_draw(
    const at::Tensor& X, const at::Tensor& xq, const at::Tensor& z, const at::Tensor& f,
    double amp, double noise) {
  for (const at::Tensor* t : {&X, &xq, &z, &f})
    TORCH_CHECK(t->device().is_cpu() && t->is_contiguous() && t->scalar_type() == at::kDouble,
                "gp_draw: contiguous float64 CPU tensors");
  TORCH_CHECK(X.dim() == 3 && xq.dim() == 2 && z.dim() == 2 && f.dim() == 1,
              "gp_draw: X (B, n, d), xq (B, d), z (B, n), f (d,)");
  const int64_t B = X.size(0), n = X.size(1), d = X.size(2);
  TORCH_CHECK(xq.size(0) == B && xq.size(1) == d && z.size(0) == B && z.size(1) == n &&
                  f.size(0) == d && n > 0 && d > 0,
              "gp_draw: shapes X (B, n, d), xq (B, d), z (B, n), f (d,), n, d >= 1");
  TORCH_CHECK(amp > 0 && noise > 0, "gp_draw: amp and noise must be positive");
  const auto opt = X.options();
  at::Tensor Y = at::empty({B, n}, opt), mu = at::empty({B}, opt), tau = at::empty({B}, opt);
  at::Tensor info = at::zeros({B}, opt.dtype(at::kInt));
  std::vector<double> A(n * (n + 1) / 2 * WD), xs((n + 1) * d * WD), zs(n * WD), rd(n * WD),
      vv(n * WD);
  for (int64_t b0 = 0; b0 < B; b0 += WD)
    draw_group(X.const_data_ptr<double>(), xq.const_data_ptr<double>(),
               z.const_data_ptr<double>(), f.const_data_ptr<double>(), amp, noise,
               Y.mutable_data_ptr<double>(), mu.mutable_data_ptr<double>(),
               tau.mutable_data_ptr<double>(), info.mutable_data_ptr<int>(), b0,
               std::min(WD, B - b0), n, d, A, xs, zs, rd, vv);
  return {Y, mu, tau, info};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(pfntheory_fused, m) {
  m.def(
      "gp_draw(Tensor X, Tensor xq, Tensor z, Tensor f, float amp, float noise) -> "
      "(Tensor, Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(pfntheory_fused, CPU, m) { m.impl("gp_draw", &fused_gp_draw); }
