// Embedding TSL in a C++ program: load a .tsl model, call it with varying
// batch sizes, check the results against a plain C++ computation.
//   embed_example MODEL.tsl
#include "tsl/tsl.h"

#include <cmath>
#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.tsl\n", argv[0]);
    return 2;
  }
  tsl::Runtime runtime;
  tsl::Status s = tsl::Runtime::create(runtime);
  tsl::Module module;
  if (s.ok())
    s = runtime.loadSource(argv[1], module);
  tsl::Function classify;
  if (s.ok())
    s = module.function("classify", classify);
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message.c_str());
    return 1;
  }
  std::vector<float> w(16 * 4);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = std::sin(0.1f * static_cast<float>(i));
  for (int64_t batch : {1, 2, 3, 5, 8, 13}) {
    std::vector<float> x(static_cast<size_t>(batch) * 16);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = std::cos(0.05f * static_cast<float>(i));
    std::vector<tsl::Output> out;
    s = classify.call({tsl::Arg::f32(x.data(), {batch, 16}),
                       tsl::Arg::f32(w.data(), {16, 4})},
                      out);
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.message.c_str());
      return 1;
    }
    // Reference: softmax(x @ w) row by row.
    double worst = 0;
    for (int64_t r = 0; r < batch; ++r) {
      double logits[4], m = -1e30, sum = 0;
      for (int c = 0; c < 4; ++c) {
        logits[c] = 0;
        for (int k = 0; k < 16; ++k)
          logits[c] += double(x[r * 16 + k]) * w[k * 4 + c];
        m = std::max(m, logits[c]);
      }
      for (double &l : logits)
        sum += std::exp(l - m);
      for (int c = 0; c < 4; ++c)
        worst = std::max(worst, std::fabs(std::exp(logits[c] - m) / sum -
                                          out[0].data<float>()[r * 4 + c]));
    }
    std::printf("batch %lld: shape [%lld, %lld], max error %.2g %s\n",
                static_cast<long long>(batch),
                static_cast<long long>(out[0].shape()[0]),
                static_cast<long long>(out[0].shape()[1]), worst,
                worst < 1e-5 ? "ok" : "WRONG");
    if (worst >= 1e-5)
      return 1;
  }
  // A wrong call is an error status with a message, not a crash.
  std::vector<float> bad(3 * 5);
  std::vector<tsl::Output> out;
  s = classify.call(
      {tsl::Arg::f32(bad.data(), {3, 5}), tsl::Arg::f32(w.data(), {16, 4})},
      out);
  std::printf("bad call: %s\n", s.ok() ? "accepted?!" : s.message.c_str());
  std::printf("compiles: %d\n", classify.compiles());
  return s.ok() ? 1 : 0;
}
