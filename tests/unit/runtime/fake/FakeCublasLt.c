/* A fake cuBLASLt for CublasLtFallbackTest: every entry point TSL resolves,
 * built twice: FAKE_CREATE_STATUS 0 (a library that serves) and 1 (one whose
 * cublasLtCreate fails with CUBLAS_STATUS_NOT_INITIALIZED, as CUDA 13's
 * cuBLAS does on a CUDA 12 driver). The heuristic always finds one
 * algorithm; cublasLtMatmul returns what fake_cublaslt_set_matmul_status
 * set (0 by default) and counts its calls. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef FAKE_CREATE_STATUS
#define FAKE_CREATE_STATUS 0
#endif

#define EXPORT __attribute__((visibility("default")))

static int matmulStatus = 0;
static int matmuls = 0;
static int handleStorage;

EXPORT void fake_cublaslt_set_matmul_status(int s) { matmulStatus = s; }
EXPORT int fake_cublaslt_matmuls(void) { return matmuls; }

EXPORT int cublasLtCreate(void **h) {
  *h = FAKE_CREATE_STATUS ? NULL : &handleStorage;
  return FAKE_CREATE_STATUS;
}
EXPORT int cublasLtDestroy(void *h) { return h ? 0 : 1; }
EXPORT const char *cublasLtGetStatusName(int s) {
  switch (s) {
  case 0:
    return "CUBLAS_STATUS_SUCCESS";
  case 1:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case 13:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

static int objects[64];
static int nextObject;
static void *newObject(void) { return &objects[nextObject++ % 64]; }

EXPORT int cublasLtMatmulDescCreate(void **d, int compute, int scale) {
  (void)compute;
  (void)scale;
  *d = newObject();
  return 0;
}
EXPORT int cublasLtMatmulDescDestroy(void *d) { return d ? 0 : 1; }
EXPORT int cublasLtMatmulDescSetAttribute(void *d, int a, const void *v,
                                          size_t n) {
  (void)a;
  (void)v;
  (void)n;
  return d ? 0 : 1;
}
EXPORT int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows,
                                      uint64_t cols, int64_t ld) {
  (void)type;
  (void)rows;
  (void)cols;
  (void)ld;
  *l = newObject();
  return 0;
}
EXPORT int cublasLtMatrixLayoutDestroy(void *l) { return l ? 0 : 1; }
EXPORT int cublasLtMatrixLayoutSetAttribute(void *l, int a, const void *v,
                                            size_t n) {
  (void)a;
  (void)v;
  (void)n;
  return l ? 0 : 1;
}
EXPORT int cublasLtMatmulPreferenceCreate(void **p) {
  *p = newObject();
  return 0;
}
EXPORT int cublasLtMatmulPreferenceDestroy(void *p) { return p ? 0 : 1; }
EXPORT int cublasLtMatmulPreferenceSetAttribute(void *p, int a, const void *v,
                                                size_t n) {
  (void)a;
  (void)v;
  (void)n;
  return p ? 0 : 1;
}

/* cublasLtMatmulHeuristicResult_t: an algo of 8 words, the workspace size,
 * a status, the waves count and 4 reserved ints. */
typedef struct {
  uint64_t algo[8];
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
} HeuristicResult;

EXPORT int cublasLtMatmulAlgoGetHeuristic(void *h, void *d, void *a, void *b,
                                          void *c, void *dd, void *pref,
                                          int want, HeuristicResult *results,
                                          int *found) {
  (void)h;
  (void)d;
  (void)a;
  (void)b;
  (void)c;
  (void)dd;
  (void)pref;
  if (want < 1)
    return 7; /* CUBLAS_STATUS_INVALID_VALUE */
  memset(results, 0, sizeof *results);
  *found = 1;
  return 0;
}

EXPORT int cublasLtMatmul(void *h, void *desc, const void *alpha, const void *a,
                          void *la, const void *b, void *lb, const void *beta,
                          const void *c, void *lc, void *d, void *ld,
                          const void *algo, void *ws, size_t wsBytes,
                          void *stream) {
  (void)h;
  (void)desc;
  (void)alpha;
  (void)a;
  (void)la;
  (void)b;
  (void)lb;
  (void)beta;
  (void)c;
  (void)lc;
  (void)d;
  (void)ld;
  (void)algo;
  (void)ws;
  (void)wsBytes;
  (void)stream;
  ++matmuls;
  return matmulStatus;
}
