/* Running an ahead-of-time TSL module with the runtime alone (no LLVM, no
 * compiler): build it with
 *   tslc build examples/embed/model.tsl --fn classify --arg x=f32[4,16] --arg w=f32[16,4] -o model.so
 * (which also writes model.so.tslsum, the digest the runtime checks the module
 * against before loading it: keep the two files together), then run
 * `aot_example model.so`. Written in C against tsl_c.h. */
#include "tsl/tsl_c.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static tsl_arg f32(float *data, int32_t ndim, int64_t *shape) {
  tsl_arg a = {0};
  a.tensor.data = data;
  a.tensor.device.device_type = 1;
  a.tensor.ndim = ndim;
  a.tensor.dtype.code = 2;
  a.tensor.dtype.bits = 32;
  a.tensor.dtype.lanes = 1;
  a.tensor.shape = shape;
  return a;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODULE.so\n", argv[0]);
    return 2;
  }
  tsl_runtime *rt;
  tsl_module *module;
  tsl_function *classify;
  if (tsl_runtime_create(NULL, &rt) != TSL_OK || tsl_module_load_aot(rt, argv[1], &module) != TSL_OK ||
      tsl_module_get_function(module, "classify", &classify) != TSL_OK) {
    fprintf(stderr, "error: %s\n", tsl_last_error());
    return 1;
  }
  float w[16 * 4];
  for (int i = 0; i < 16 * 4; ++i)
    w[i] = sinf(0.1f * (float)i);
  int64_t wshape[2] = {16, 4};
  int64_t batches[] = {1, 3, 4, 9};
  for (int b = 0; b < 4; ++b) {
    int64_t n = batches[b];
    float *x = malloc(sizeof(float) * (size_t)n * 16);
    for (int64_t i = 0; i < n * 16; ++i)
      x[i] = cosf(0.05f * (float)i);
    int64_t xshape[2] = {n, 16};
    tsl_arg args[2] = {f32(x, 2, xshape), f32(w, 2, wshape)};
    tsl_tensor *out;
    int32_t nout;
    if (tsl_function_call(classify, args, 2, &out, &nout) != TSL_OK) {
      fprintf(stderr, "error: %s\n", tsl_last_error());
      return 1;
    }
    double worst = 0;
    for (int64_t r = 0; r < out[0].shape[0]; ++r) {
      double sum = 0;
      for (int c = 0; c < 4; ++c)
        sum += ((float *)out[0].data)[r * 4 + c];
      worst = fmax(worst, fabs(sum - 1.0));
    }
    printf("batch %lld: [%lld, %lld], rows sum to 1 within %.1g\n", (long long)n,
           (long long)out[0].shape[0], (long long)out[0].shape[1], worst);
    tsl_outputs_free(out, nout);
    free(x);
  }
  /* A size the module was not compiled for: an error, not a crash. */
  float bad[3 * 5];
  int64_t badShape[2] = {3, 5};
  tsl_arg args[2] = {f32(bad, 2, badShape), f32(w, 2, wshape)};
  tsl_tensor *out;
  int32_t nout;
  tsl_status s = tsl_function_call(classify, args, 2, &out, &nout);
  printf("bad call: status %d: %s\n", (int)s, tsl_last_error());
  tsl_runtime_destroy(rt);
  return s == TSL_OK ? 1 : 0;
}
