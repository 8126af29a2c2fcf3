/* Large functions called through the C ABI on a thread whose small stack
 * the caller provided, as fiber libraries and musl's 128 KiB default thread
 * stacks do. The generated entry point kept 8 bytes of stack per IR value:
 * a 40,000-term function allocated a 320 KB frame and wrote below a 128 KiB
 * stack while returning TSL_OK. Canary bytes below the stack must survive
 * each call, and the results must be right. Also prints how much of the
 * stack each call used.
 * usage: small_stack_call WORK_DIR */
#define _GNU_SOURCE
#include "tsl/tsl_c.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  kTerms = 40000,   /* terms of `sum`: one fused kernel, 40,000 IR values */
  kProducts = 1500, /* matmuls of `chain`: one kernel call each */
  kStackBytes = 128 * 1024,
  kCanaryBytes = 1024 * 1024
};
static const unsigned char kCanary = 0xA5;

struct call {
  tsl_function *fn;
  int32_t nargs;
  float x[4], w[1];
  float out[4];
  tsl_status status;
};

static tsl_arg tensorArg(float *data, int64_t *shape, int32_t ndim) {
  tsl_arg arg;
  memset(&arg, 0, sizeof arg);
  arg.tensor.data = data;
  arg.tensor.device.device_type = 1;
  arg.tensor.ndim = ndim;
  arg.tensor.dtype.code = 2;
  arg.tensor.dtype.bits = 32;
  arg.tensor.dtype.lanes = 1;
  arg.tensor.shape = shape;
  return arg;
}

static void *callOnThread(void *p) {
  struct call *c = p;
  int64_t xShape[2] = {4, 1}, wShape[2] = {1, 1};
  tsl_arg args[2] = {tensorArg(c->x, xShape, c->nargs == 1 ? 1 : 2),
                     tensorArg(c->w, wShape, 2)};
  tsl_tensor *outputs = NULL;
  int32_t n = 0;
  c->status = tsl_function_call(c->fn, args, c->nargs, &outputs, &n);
  if (c->status == TSL_OK && n == 1)
    memcpy(c->out, outputs[0].data, sizeof c->out);
  if (c->status == TSL_OK)
    tsl_outputs_free(outputs, n);
  return NULL;
}

static int writeModel(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f)
    return 0;
  fputs("dim N: dynamic;\nfn sum(x: f32[N]) -> f32[N] {\n  return x", f);
  for (int i = 1; i < kTerms; ++i)
    fputs(" + x", f);
  fputs(";\n}\nfn chain(x: f32[N, 1], w: f32[1, 1]) -> f32[N, 1] {\n"
        "  let v0 = x;\n",
        f);
  for (int i = 1; i <= kProducts; ++i)
    fprintf(f, "  let v%d = v%d @ w;\n", i, i - 1);
  fprintf(f, "  return v%d;\n}\n", kProducts);
  return fclose(f) == 0;
}

/* out = x * scale, else a message. */
static int expectResult(const struct call *c, float scale, const char *what) {
  if (c->status != TSL_OK) {
    fprintf(stderr, "%s: call failed: %s\n", what, tsl_last_error());
    return 0;
  }
  for (int i = 0; i < 4; ++i)
    if (c->out[i] != c->x[i] * scale) {
      fprintf(stderr, "%s: out[%d] = %g, expected %g\n", what, i, c->out[i],
              c->x[i] * scale);
      return 0;
    }
  return 1;
}

/* Calls c's function on the current thread (which compiles its variant),
 * then on a 128 KiB stack with canary bytes below it. */
static int checkOnSmallStack(struct call *c, float scale, const char *name) {
  for (int i = 0; i < 4; ++i)
    c->x[i] = (float)(i + 1);
  c->w[0] = 1.0f;
  callOnThread(c);
  int ok = expectResult(c, scale, name);
  unsigned char *region = malloc(kCanaryBytes + kStackBytes);
  if (!region)
    return 0;
  memset(region, kCanary, kCanaryBytes + kStackBytes);
  memset(c->out, 0, sizeof c->out);
  c->x[0] = -2.0f;
  pthread_attr_t attr;
  pthread_t thread;
  if (pthread_attr_init(&attr) != 0 ||
      pthread_attr_setstack(&attr, region + kCanaryBytes, kStackBytes) != 0 ||
      pthread_create(&thread, &attr, callOnThread, c) != 0 ||
      pthread_join(thread, NULL) != 0) {
    fprintf(stderr, "%s: cannot run a thread on a caller-provided stack\n",
            name);
    free(region);
    return 0;
  }
  ok &= expectResult(c, scale, name);
  size_t below = 0, used = kStackBytes;
  for (size_t i = 0; i < kCanaryBytes; ++i)
    below += region[i] != kCanary;
  while (used > 0 && region[kCanaryBytes + kStackBytes - used] == kCanary)
    --used;
  fprintf(stderr, "%s: the call used at most %zu bytes of its stack\n", name,
          used);
  if (below) {
    fprintf(stderr, "%s: the call wrote %zu bytes below its 128 KiB stack\n",
            name, below);
    ok = 0;
  }
  free(region);
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: small_stack_call WORK_DIR\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/small_stack_model.tsl", argv[1]);
  if (!writeModel(path)) {
    fprintf(stderr, "cannot write %s\n", path);
    return 2;
  }
  tsl_runtime_options options;
  memset(&options, 0, sizeof options);
  tsl_runtime *rt = NULL;
  tsl_module *module = NULL;
  struct call sum, chain;
  memset(&sum, 0, sizeof sum);
  memset(&chain, 0, sizeof chain);
  sum.nargs = 1;
  chain.nargs = 2;
  if (tsl_runtime_create(&options, &rt) != TSL_OK ||
      tsl_runtime_enable_jit(rt) != TSL_OK ||
      tsl_module_load_source(rt, path, &module) != TSL_OK ||
      tsl_module_get_function(module, "sum", &sum.fn) != TSL_OK ||
      tsl_module_get_function(module, "chain", &chain.fn) != TSL_OK) {
    fprintf(stderr, "setup: %s\n", tsl_last_error());
    return 1;
  }
  int passed = checkOnSmallStack(&sum, (float)kTerms, "sum");
  passed += checkOnSmallStack(&chain, 1.0f, "chain");
  tsl_runtime_destroy(rt);
  printf("%d passed, %d failed\n", passed, 2 - passed);
  return passed == 2 ? 0 : 1;
}
