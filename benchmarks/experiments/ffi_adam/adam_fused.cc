// Prototype: Adam's per-parameter step as ONE loop (read g, w, m, v; write w, m, v: 28 B/param), as an XLA
// FFI custom call for the CPU. Built at run time by ffi_adam.py with the machine's g++.
//
// Arithmetic: the same per-element operations, in the same order and with the same fused multiply-adds, as
// the program XLA:CPU compiles from mxopt_jax.adam.adam_step + optax.apply_updates (XLA/LLVM contracts
// `b * old + c * new` into fma(b, old, c * new)):
//   m' = fma(b1, m, c1 * G)          c1 = 1 - b1 (float32)
//   v' = fma(b2, v, c2 * (G * G))    c2 = 1 - b2
//   w' = w + (nlr * m') / (sqrt(v') + eps)     nlr = -lr * sqrt(1 - b2^t) / (1 - b1^t), computed by XLA
// The scalars arrive as a float32[6] operand (b1, c1, b2, c2, nlr, eps) so that traced values (lr_t depends
// on the step count) need no recompilation. Compile with -ffp-contract=off so only the explicit fmaf fuse.
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

static void adam_range(const float* g, const float* w, const float* m, const float* v, float* wo, float* mo,
                       float* vo, int64_t lo, int64_t hi, const float* hp) {
  const float b1 = hp[0], c1 = hp[1], b2 = hp[2], c2 = hp[3], nlr = hp[4], eps = hp[5];
#pragma GCC ivdep
  for (int64_t i = lo; i < hi; ++i) {
    const float G = g[i];
    const float mn = std::fmaf(b1, m[i], c1 * G);
    const float vn = std::fmaf(b2, v[i], c2 * (G * G));
    mo[i] = mn;
    vo[i] = vn;
    wo[i] = w[i] + (nlr * mn) / (std::sqrt(vn) + eps);
  }
}

static ffi::Error AdamFusedImpl(ffi::Buffer<ffi::F32> g, ffi::Buffer<ffi::F32> w, ffi::Buffer<ffi::F32> m,
                                ffi::Buffer<ffi::F32> v, ffi::Buffer<ffi::F32> hp,
                                ffi::ResultBuffer<ffi::F32> wo, ffi::ResultBuffer<ffi::F32> mo,
                                ffi::ResultBuffer<ffi::F32> vo, int64_t threads) {
  const int64_t n = static_cast<int64_t>(g.element_count());
  if (w.element_count() != n || m.element_count() != n || v.element_count() != n || hp.element_count() != 6) {
    return ffi::Error::InvalidArgument("adam_fused: g, w, m, v must have the same size and hp 6 elements");
  }
  const float* H = hp.typed_data();
  const int64_t T = threads > 0 ? threads : 1;
  const int64_t chunk = ((n + T - 1) / T + 15) / 16 * 16;  // 64-byte aligned chunks
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < T; ++t) {
    const int64_t lo = t * chunk, hi = std::min(n, lo + chunk);
    if (lo >= hi) break;
    pool.emplace_back(adam_range, g.typed_data(), w.typed_data(), m.typed_data(), v.typed_data(),
                      wo->typed_data(), mo->typed_data(), vo->typed_data(), lo, hi, H);
  }
  adam_range(g.typed_data(), w.typed_data(), m.typed_data(), v.typed_data(), wo->typed_data(),
             mo->typed_data(), vo->typed_data(), 0, std::min(n, chunk), H);
  for (auto& th : pool) th.join();
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(AdamFused, AdamFusedImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()  // g
                                  .Arg<ffi::Buffer<ffi::F32>>()  // w
                                  .Arg<ffi::Buffer<ffi::F32>>()  // m
                                  .Arg<ffi::Buffer<ffi::F32>>()  // v
                                  .Arg<ffi::Buffer<ffi::F32>>()  // hp[6]
                                  .Ret<ffi::Buffer<ffi::F32>>()  // w'
                                  .Ret<ffi::Buffer<ffi::F32>>()  // m'
                                  .Ret<ffi::Buffer<ffi::F32>>()  // v'
                                  .Attr<int64_t>("threads"));
