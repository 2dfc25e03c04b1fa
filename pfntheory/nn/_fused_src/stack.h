// The solver stack's layer glue, shared by the fused operators' sources: the per-layer loop
// signatures, the layers' values and state update (stack_forward_one / stack_backward_one: the
// maths below) and the batch loops of the stack ops, whichever loop computes P v and its backward
// (kernel_attention.cpp's row loops, stack_pairs.cpp's pairwise ones).
#pragma once

#include "vec.h"

namespace {

template <typename T>
using FwdFn = void (*)(const T*, const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t,
                       Scratch<T>&);
template <typename T>
using BwdFn = void (*)(const T*, const T*, const T*, const T*, const T*, T*, double*, int64_t,
                       int64_t, int64_t, int64_t, Scratch<T>&);

// The L-1 solver layers of pfntheory.nn.model in one call (pfntheory.nn.fused.solver_stack), one
// instance at a time through every layer, so its tokens, values and state stay in cache. Layer l
// (0-based here; layer l+1 of the model) with per-layer scale s_l, V_l = (V_fy, V_ff, V_gk, V_gg),
// S_l = (S_ff, S_gg), state H (T, 2) (rows f, g; H = 0 before the first):
//   vals_j = (R_j0 V_l0 + H_j0 V_l1, R_j1 V_l2 + H_j1 V_l3) (j < n), and a column of ones for TF^pr
//   out = P_l vals (forward_one), and then
//   H_i <- (H_i + out_i) + H_i S_l                         unnormalised
//   H_i <- (H_i + a_i) + H_i S_l / s_i, a_i = out_i / s_i, s_i = out_i2 (the normaliser)   TF^pr
// as the model's eager loop computes it. Saved per layer for the backward pass: H before the layer
// and out. Backward, with gH = dL/dH after the layer:
//   unnormalised  g_out = gH,  dS_c += sum_i gH_ic H_ic,  gH_prev = gH (1 + S)
//   TF^pr         g_out_ic = gH_ic / s_i (c < 2),  g_out_i2 = -sum_c gH_ic (a_ic + H_ic S_c / s_i) / s_i,
//                 dS_c += sum_i gH_ic H_ic / s_i,  gH_prev = gH (1 + S / s)
//   then backward_one gives dvals = P^T g_out and the scale sums, and
//   gH_prev_j0 += dvals_j0 V_l1, gH_prev_j1 += dvals_j1 V_l3, dR_j0 += dvals_j0 V_l0,
//   dR_j1 += dvals_j1 V_l2, dV_l += (dvals_j0 R_j0, dvals_j0 H_j0, dvals_j1 R_j1, dvals_j1 H_j1).
// Parameter sums (dV, dS and the scale sums) accumulate in double over the instances.
template <typename T>
void stack_vals(const T* R, const T* H, const T* Vl, T* vals, int64_t n, int64_t m) {
  for (int64_t j = 0; j < n; ++j) {
    vals[j * m] = R[j * 2] * Vl[0] + H[j * 2] * Vl[1];
    vals[j * m + 1] = R[j * 2 + 1] * Vl[2] + H[j * 2 + 1] * Vl[3];
    if (m == 3) vals[j * m + 2] = T(1);
  }
}

template <typename T>
void stack_forward_one(const T* x, const T* scales, const T* R, const T* V, const T* S, T* H,
                       T* Hs, T* outs, int64_t layers, int64_t Tq, int64_t n, int64_t d, bool norm,
                       FwdFn<T> fwd, Scratch<T>& w, std::vector<T>& vals, std::vector<T>& out1) {
  const int64_t m = norm ? 3 : 2;
  vals.resize(n * m);
  out1.resize(Tq * m);
  std::fill(H, H + Tq * 2, T(0));
  for (int64_t l = 0; l < layers; ++l) {
    if (Hs) std::copy(H, H + Tq * 2, Hs + l * Tq * 2);
    T* out = outs ? outs + l * Tq * m : out1.data();
    stack_vals(R, H, V + l * 4, vals.data(), n, m);
    fwd(x, scales + l * d, vals.data(), out, Tq, n, d, m, w);
    const T* Sl = S + l * 2;
    for (int64_t i = 0; i < Tq; ++i) {
      if (norm) {
        const T si = out[i * 3 + 2];
        for (int64_t c = 0; c < 2; ++c)
          H[i * 2 + c] = (H[i * 2 + c] + out[i * 3 + c] / si) + H[i * 2 + c] * Sl[c] / si;
      } else {
        for (int64_t c = 0; c < 2; ++c)
          H[i * 2 + c] = (H[i * 2 + c] + out[i * 2 + c]) + H[i * 2 + c] * Sl[c];
      }
    }
  }
}

template <typename T>
void stack_backward_one(const T* x, const T* scales, const T* R, const T* V, const T* S,
                        const T* Hs, const T* outs, const T* gHL, T* dR, double* dV, double* dS,
                        double* dsc, int64_t layers, int64_t Tq, int64_t n, int64_t d, bool norm,
                        BwdFn<T> bwd, Scratch<T>& w, std::vector<T>& buf) {
  const int64_t m = norm ? 3 : 2;
  buf.resize(n * m * 2 + Tq * m + Tq * 4);
  T* vals = buf.data();
  T* dvals = vals + n * m;
  T* gout = dvals + n * m;
  T* gH = gout + Tq * m;
  T* gP = gH + Tq * 2;
  std::copy(gHL, gHL + Tq * 2, gH);
  std::fill(dR, dR + n * 2, T(0));
  for (int64_t l = layers - 1; l >= 0; --l) {
    const T* H = Hs + l * Tq * 2;
    const T* out = outs + l * Tq * m;
    const T* Vl = V + l * 4;
    const T* Sl = S + l * 2;
    double dS0 = 0, dS1 = 0;
    for (int64_t i = 0; i < Tq; ++i) {
      const T g0 = gH[i * 2], g1 = gH[i * 2 + 1], h0 = H[i * 2], h1 = H[i * 2 + 1];
      if (norm) {
        const T si = out[i * 3 + 2];
        const T a0 = out[i * 3] / si, a1 = out[i * 3 + 1] / si;
        gout[i * 3] = g0 / si;
        gout[i * 3 + 1] = g1 / si;
        gout[i * 3 + 2] = -(g0 * (a0 + h0 * Sl[0] / si) + g1 * (a1 + h1 * Sl[1] / si)) / si;
        dS0 += static_cast<double>(g0) * h0 / si;
        dS1 += static_cast<double>(g1) * h1 / si;
        gP[i * 2] = g0 * (T(1) + Sl[0] / si);
        gP[i * 2 + 1] = g1 * (T(1) + Sl[1] / si);
      } else {
        gout[i * 2] = g0;
        gout[i * 2 + 1] = g1;
        dS0 += static_cast<double>(g0) * h0;
        dS1 += static_cast<double>(g1) * h1;
        gP[i * 2] = g0 * (T(1) + Sl[0]);
        gP[i * 2 + 1] = g1 * (T(1) + Sl[1]);
      }
    }
    dS[l * 2] += dS0;
    dS[l * 2 + 1] += dS1;
    stack_vals(R, H, Vl, vals, n, m);
    bwd(x, scales + l * d, vals, gout, out, dvals, dsc + l * d, Tq, n, d, m, w);
    double v0 = 0, v1 = 0, v2 = 0, v3 = 0;
    for (int64_t j = 0; j < n; ++j) {
      const T e0 = dvals[j * m], e1 = dvals[j * m + 1];
      gP[j * 2] += e0 * Vl[1];
      gP[j * 2 + 1] += e1 * Vl[3];
      dR[j * 2] += e0 * Vl[0];
      dR[j * 2 + 1] += e1 * Vl[2];
      v0 += static_cast<double>(e0) * R[j * 2];
      v1 += static_cast<double>(e0) * H[j * 2];
      v2 += static_cast<double>(e1) * R[j * 2 + 1];
      v3 += static_cast<double>(e1) * H[j * 2 + 1];
    }
    dV[l * 4] += v0;
    dV[l * 4 + 1] += v1;
    dV[l * 4 + 2] += v2;
    dV[l * 4 + 3] += v3;
    std::copy(gP, gP + Tq * 2, gH);
  }
}

void check_stack(const at::Tensor& x, const at::Tensor& scales, const at::Tensor& R,
                 const at::Tensor& V, const at::Tensor& S) {
  TORCH_CHECK(x.device().is_cpu(), "CPU tensors");
  TORCH_CHECK(x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble,
              "float32 or float64");
  for (const at::Tensor* t : {&x, &scales, &R, &V, &S})
    TORCH_CHECK(t->device().is_cpu() && t->is_contiguous() && t->scalar_type() == x.scalar_type(),
                "contiguous CPU tensors of one dtype");
  const int64_t layers = scales.size(0);
  TORCH_CHECK(x.dim() == 3 && R.dim() == 3 && R.size(0) == x.size(0) && R.size(2) == 2 &&
                  R.size(1) < x.size(1) && R.size(1) > 0,
              "x (B, T, d), R (B, n < T, 2)");
  TORCH_CHECK(scales.dim() == 2 && scales.size(1) == x.size(2) && V.dim() == 2 &&
                  V.size(0) == layers && V.size(1) == 4 && S.dim() == 2 && S.size(0) == layers &&
                  S.size(1) == 2,
              "scales (L-1, d), V (L-1, 4), S (L-1, 2)");
}

// The ops stack_forward and stack_backward over the batch, one instance after another, with the
// per-layer loop pick(T(0)) -> FwdFn<T> (BwdFn<T>): kernel_attention.cpp's row loops or
// stack_pairs.cpp's pairwise ones. The backward's scale sums are rbf's (c_k = -s_k) or softmax's.
template <typename Pick>
std::tuple<at::Tensor, at::Tensor, at::Tensor> stack_forward_op(
    const at::Tensor& x, const at::Tensor& scales, const at::Tensor& R, const at::Tensor& V,
    const at::Tensor& S, bool norm, bool save, Pick pick) {
  check_stack(x, scales, R, V, S);
  const int64_t B = x.size(0), Tq = x.size(1), d = x.size(2), n = R.size(1);
  const int64_t layers = scales.size(0), m = norm ? 3 : 2;
  at::Tensor H = at::empty({B, Tq, 2}, x.options());
  at::Tensor Hs = at::empty({save ? B : 0, layers, Tq, 2}, x.options());
  at::Tensor outs = at::empty({save ? B : 0, layers, Tq, m}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "stack_forward", [&] {
    using T = scalar_t;
    const FwdFn<T> fwd = pick(T(0));
    Scratch<T> w;
    std::vector<T> vals, out1;
    for (int64_t b = 0; b < B; ++b)
      stack_forward_one<T>(x.const_data_ptr<T>() + b * Tq * d, scales.const_data_ptr<T>(),
                           R.const_data_ptr<T>() + b * n * 2, V.const_data_ptr<T>(),
                           S.const_data_ptr<T>(), H.mutable_data_ptr<T>() + b * Tq * 2,
                           save ? Hs.mutable_data_ptr<T>() + b * layers * Tq * 2 : nullptr,
                           save ? outs.mutable_data_ptr<T>() + b * layers * Tq * m : nullptr,
                           layers, Tq, n, d, norm, fwd, w, vals, out1);
  });
  return {H, Hs, outs};
}

template <typename Pick>
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> stack_backward_op(
    const at::Tensor& x, const at::Tensor& scales, const at::Tensor& R, const at::Tensor& V,
    const at::Tensor& S, const at::Tensor& Hs, const at::Tensor& outs, const at::Tensor& gH,
    bool rbf, bool norm, Pick pick) {
  check_stack(x, scales, R, V, S);
  const int64_t B = x.size(0), Tq = x.size(1), d = x.size(2), n = R.size(1);
  const int64_t layers = scales.size(0), m = norm ? 3 : 2;
  for (const at::Tensor* t : {&Hs, &outs, &gH})
    TORCH_CHECK(t->is_contiguous() && t->scalar_type() == x.scalar_type(), "contiguous, x's dtype");
  TORCH_CHECK(Hs.sizes() == at::IntArrayRef({B, layers, Tq, 2}) &&
                  outs.sizes() == at::IntArrayRef({B, layers, Tq, m}) &&
                  gH.sizes() == at::IntArrayRef({B, Tq, 2}),
              "saved state of stack_forward(save=True) and gH (B, T, 2)");
  at::Tensor dR = at::empty({B, n, 2}, x.options());
  at::Tensor dscales = at::empty({layers, d}, x.options());
  at::Tensor dV = at::empty({layers, 4}, x.options());
  at::Tensor dS = at::empty({layers, 2}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "stack_backward", [&] {
    using T = scalar_t;
    const BwdFn<T> bwd = pick(T(0));
    Scratch<T> w;
    std::vector<T> buf;
    std::vector<double> acc_v(layers * 4, 0.0), acc_s(layers * 2, 0.0), acc_k(layers * d, 0.0);
    for (int64_t b = 0; b < B; ++b)
      stack_backward_one<T>(x.const_data_ptr<T>() + b * Tq * d, scales.const_data_ptr<T>(),
                            R.const_data_ptr<T>() + b * n * 2, V.const_data_ptr<T>(),
                            S.const_data_ptr<T>(), Hs.const_data_ptr<T>() + b * layers * Tq * 2,
                            outs.const_data_ptr<T>() + b * layers * Tq * m,
                            gH.const_data_ptr<T>() + b * Tq * 2, dR.mutable_data_ptr<T>() + b * n * 2,
                            acc_v.data(), acc_s.data(), acc_k.data(), layers, Tq, n, d, norm, bwd,
                            w, buf);
    const T* sp = scales.const_data_ptr<T>();
    T* dsp = dscales.mutable_data_ptr<T>();
    for (int64_t i = 0; i < layers * d; ++i)
      dsp[i] = static_cast<T>((rbf ? -1.0 : 2.0) * static_cast<double>(sp[i]) * acc_k[i]);
    for (int64_t i = 0; i < layers * 4; ++i) dV.mutable_data_ptr<T>()[i] = static_cast<T>(acc_v[i]);
    for (int64_t i = 0; i < layers * 2; ++i) dS.mutable_data_ptr<T>()[i] = static_cast<T>(acc_s[i]);
  });
  return {dscales, dR, dV, dS};
}

}  // namespace
