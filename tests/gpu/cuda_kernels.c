/* tests/gpu/cuda_kernels.c - accel's modules and kernels (ABI 1.2) on a
 * real NVIDIA GPU, built and run by tests/gpu/cuda.sh (not by meson: it
 * needs the real driver). Uses accel.h and the CUDA Driver API only; the
 * driver is dlopen()ed, the same file the plugin opens (ACCEL_CUDA_DRIVER,
 * else libcuda.so.1), so both talk to one driver instance.
 *
 * Usage: cuda-kernels PTX_FILE, the PTX nvcc made from
 * kernels/accel_kernels.cu at build time (<build>/kernels/accel_kernels.ptx).
 * Without that file (the build had no nvcc) no kernel can run: it says FAIL
 * and exits 1.
 *
 * On device 0, through accel (accel_module_load of the file's bytes, which
 * carry no terminating NUL, then accel_launch_kernel):
 *   - vector_add, saxpy (one fused multiply-add per element, as nvcc emits
 *     it: compared with C's fmaf), reduce_sum (its local memory argument is
 *     the dynamic shared scratch; small integers, so the sums are exact) and
 *     index_3d on 1-D, 2-D and 3-D grids, every element checked against the
 *     same arithmetic done here;
 *   - the launch overhead: `empty` (no parameters) and `saxpy` on one
 *     element (four parameters) launched through accel_launch_kernel and
 *     through cuLaunchKernel directly, on the same CUstream
 *     (accel_stream_native_handle) with the same CUfunction's module loaded
 *     by the driver itself. Each round times a batch of launches on the host
 *     (the batch is kept short of the driver's launch queue, so no launch
 *     waits for the GPU), then synchronizes outside the timing; 21 rounds
 *     each, interleaved, median reported. Target: accel within 1.05x of the
 *     direct call. Timings are reported here, not checked; the target is
 *     checked by cuda.sh on bench-cuda's paired Google Benchmark runs
 *     (tests/bench/bench_cuda.cpp, tests/gpu/check_ratios.py).
 *
 * Exit status: the number of failed checks. */
#define _GNU_SOURCE
#include <accel/accel.h>
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STR2(x) #x
#define STR(x) STR2(x)

/* The driver entry points used here, typed by cuda.h's prototypes. */
static struct {
  __typeof__(&cuGetErrorName) cuGetErrorName;
  __typeof__(&cuCtxGetCurrent) cuCtxGetCurrent;
  __typeof__(&cuCtxSetCurrent) cuCtxSetCurrent;
  __typeof__(&cuModuleLoadDataEx) cuModuleLoadDataEx;
  __typeof__(&cuModuleGetFunction) cuModuleGetFunction;
  __typeof__(&cuModuleUnload) cuModuleUnload;
  __typeof__(&cuLaunchKernel) cuLaunchKernel;
  __typeof__(&cuStreamSynchronize) cuStreamSynchronize;
} cu;

static int failures = 0;

#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      ++failures;                                            \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      printf(__VA_ARGS__);                                   \
      printf("\n");                                          \
    }                                                        \
  } while (0)

#define OK(expr) ok_((expr), #expr, __LINE__)
static int ok_(accel_status_t st, const char* what, int line) {
  if (st == ACCEL_SUCCESS) return 1;
  ++failures;
  printf("FAIL line %d: %s -> %s: %s\n", line, what, accel_status_name(st), accel_last_error());
  return 0;
}

#define CU_OK(expr) cu_ok_((expr), #expr, __LINE__)
static int cu_ok_(CUresult rc, const char* what, int line) {
  if (rc == CUDA_SUCCESS) return 1;
  const char* name = NULL;
  if (cu.cuGetErrorName == NULL || cu.cuGetErrorName(rc, &name) != CUDA_SUCCESS) name = "?";
  ++failures;
  printf("FAIL line %d: %s -> %s (%d)\n", line, what, name, (int)rc);
  return 0;
}

static const char* driver_path(void) {
  const char* path = getenv("ACCEL_CUDA_DRIVER");
  return path != NULL && *path != '\0' ? path : "libcuda.so.1";
}

static void* load_driver(void) {
  const char* path = driver_path();
  void* h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (h == NULL) {
    printf("cannot load the CUDA driver %s: %s\n", path, dlerror());
    return NULL;
  }
#define LOAD(name)                                         \
  do {                                                     \
    *(void**)(&cu.name) = dlsym(h, STR(name));             \
    if (cu.name == NULL) {                                 \
      printf("the driver %s lacks %s\n", path, STR(name)); \
      return NULL;                                         \
    }                                                      \
  } while (0)
  LOAD(cuGetErrorName);
  LOAD(cuCtxGetCurrent);
  LOAD(cuCtxSetCurrent);
  LOAD(cuModuleLoadDataEx);
  LOAD(cuModuleGetFunction);
  LOAD(cuModuleUnload);
  LOAD(cuLaunchKernel);
  LOAD(cuStreamSynchronize);
#undef LOAD
  printf("driver: %s\n", path);
  return h;
}

/* The whole file, not NUL-terminated (accel.h: text images need none). */
static unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  unsigned char* data = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n)) != NULL) {
      if (fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
      } else {
        *size = (size_t)n;
      }
    }
  }
  fclose(f);
  return data;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static accel_launch_config_t config(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by,
                                    uint32_t bz, accel_stream_t s) {
  accel_launch_config_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.grid.x = gx, c.grid.y = gy, c.grid.z = gz;
  c.block.x = bx, c.block.y = by, c.block.z = bz;
  c.stream = s;
  return c;
}

static accel_kernel_arg_t ptr_arg(const void* p) {
  accel_kernel_arg_t a = {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), p};
  return a;
}
static accel_kernel_arg_t value_arg(const void* v, size_t size) {
  accel_kernel_arg_t a = {ACCEL_KERNEL_ARG_VALUE, size, v};
  return a;
}
static accel_kernel_arg_t local_arg(size_t size) {
  accel_kernel_arg_t a = {ACCEL_KERNEL_ARG_LOCAL_MEMORY, size, NULL};
  return a;
}

static accel_kernel_t get_kernel(accel_module_t m, const char* name) {
  accel_kernel_t k = NULL;
  if (!OK(accel_module_get_kernel(m, name, &k))) return NULL;
  accel_kernel_attributes_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  if (OK(accel_kernel_get_attributes(k, &a)))
    printf(
        "  %-10s max %lld threads/block, %lld registers, %lld B static shared, %lld B local, "
        "warp %lld, %d parameters\n",
        name, (long long)a.max_threads_per_block, (long long)a.num_registers,
        (long long)a.static_shared_bytes, (long long)a.private_bytes,
        (long long)a.preferred_block_multiple, (int)a.num_args);
  return k;
}

/* Device copies of host arrays, and back. */
static void* upload(const void* host, size_t bytes, accel_stream_t s) {
  void* d = NULL;
  if (!OK(accel_malloc(0, bytes, &d))) return NULL;
  OK(accel_memcpy_async(d, host, bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  return d;
}
static int download(void* host, const void* dev, size_t bytes, accel_stream_t s) {
  return OK(accel_memcpy_async(host, dev, bytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s)) &&
         OK(accel_stream_synchronize(s));
}

/* ---- results -------------------------------------------------------------- */

static void check_vector_add_saxpy(accel_kernel_t add, accel_kernel_t saxpy, accel_stream_t s) {
  const uint32_t n = (1u << 20) + 3; /* a partial last block */
  float* a = malloc(n * sizeof(float));
  float* b = malloc(n * sizeof(float));
  float* c = malloc(n * sizeof(float));
  if (a == NULL || b == NULL || c == NULL) abort();
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = (float)(i % 1000) * 0.5f + 1.0f;
    b[i] = (float)(i % 777) * -1.25f + 3.0f;
  }
  void* da = upload(a, n * sizeof(float), s);
  void* db = upload(b, n * sizeof(float), s);
  void* dc = NULL;
  OK(accel_malloc(0, n * sizeof(float), &dc));
  accel_launch_config_t cfg = config((n + 255) / 256, 1, 1, 256, 1, 1, s);
  accel_kernel_arg_t args[4] = {ptr_arg(da), ptr_arg(db), ptr_arg(dc), value_arg(&n, sizeof n)};
  OK(accel_launch_kernel(add, &cfg, args, 4));
  if (download(c, dc, n * sizeof(float), s)) {
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < n; ++i) wrong += c[i] != a[i] + b[i];
    CHECK(wrong == 0, "vector_add: %u of %u elements wrong", wrong, n);
    printf("vector_add: %u elements checked\n", n);
  }
  /* saxpy: b = alpha * a + b, in place. */
  const float alpha = 1.75f;
  accel_kernel_arg_t sargs[4] = {value_arg(&alpha, sizeof alpha), ptr_arg(da), ptr_arg(db),
                                 value_arg(&n, sizeof n)};
  OK(accel_launch_kernel(saxpy, &cfg, sargs, 4));
  if (download(c, db, n * sizeof(float), s)) {
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < n; ++i) wrong += c[i] != fmaf(a[i], alpha, b[i]);
    CHECK(wrong == 0, "saxpy: %u of %u elements differ from fmaf", wrong, n);
    printf("saxpy: %u elements checked\n", n);
  }
  accel_free(da);
  accel_free(db);
  accel_free(dc);
  free(a);
  free(b);
  free(c);
}

static void check_reduce_sum(accel_kernel_t reduce, accel_stream_t s) {
  const uint32_t n = 1u << 20, block = 256, blocks = n / block + 1; /* one block half empty */
  const uint32_t len = n - block / 2;
  float* in = malloc(len * sizeof(float));
  float* partial = malloc(blocks * sizeof(float));
  if (in == NULL || partial == NULL) abort();
  for (uint32_t i = 0; i < len; ++i) in[i] = (float)(i % 13);
  void* din = upload(in, len * sizeof(float), s);
  void* dp = NULL;
  OK(accel_malloc(0, blocks * sizeof(float), &dp));
  const uint32_t grid = (len + block - 1) / block;
  accel_launch_config_t cfg = config(grid, 1, 1, block, 1, 1, s);
  accel_kernel_arg_t args[4] = {ptr_arg(din), ptr_arg(dp), local_arg(block * sizeof(float)),
                                value_arg(&len, sizeof len)};
  OK(accel_launch_kernel(reduce, &cfg, args, 4));
  if (download(partial, dp, grid * sizeof(float), s)) {
    uint32_t wrong = 0;
    for (uint32_t g = 0; g < grid; ++g) {
      float want = 0.0f;
      for (uint32_t i = g * block; i < (g + 1) * block && i < len; ++i) want += in[i];
      wrong += partial[g] != want;
    }
    CHECK(wrong == 0, "reduce_sum: %u of %u block sums wrong", wrong, grid);
    printf("reduce_sum: %u block sums checked\n", grid);
  }
  accel_free(din);
  accel_free(dp);
  free(in);
  free(partial);
}

static void check_index_3d(accel_kernel_t k, accel_stream_t s, uint32_t gx, uint32_t gy,
                           uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz) {
  const uint32_t w = gx * bx, h = gy * by, d = gz * bz;
  const size_t count = (size_t)w * h * d;
  uint32_t* out = malloc(count * sizeof(uint32_t));
  if (out == NULL) abort();
  void* dout = NULL;
  if (!OK(accel_malloc(0, count * sizeof(uint32_t), &dout))) return;
  OK(accel_memset_async(dout, 0xff, count * sizeof(uint32_t), s));
  accel_launch_config_t cfg = config(gx, gy, gz, bx, by, bz, s);
  accel_kernel_arg_t args[3] = {ptr_arg(dout), value_arg(&w, sizeof w), value_arg(&h, sizeof h)};
  OK(accel_launch_kernel(k, &cfg, args, 3));
  if (download(out, dout, count * sizeof(uint32_t), s)) {
    size_t wrong = 0;
    for (uint32_t z = 0; z < d; ++z)
      for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x)
          wrong += out[((size_t)z * h + y) * w + x] != (x | y << 10 | z << 20);
    CHECK(wrong == 0, "index_3d grid (%u,%u,%u) block (%u,%u,%u): %zu of %zu wrong", gx, gy, gz, bx,
          by, bz, wrong, count);
    printf("index_3d: grid (%u, %u, %u) x block (%u, %u, %u): %zu elements checked\n", gx, gy, gz,
           bx, by, bz, count);
  }
  accel_free(dout);
  free(out);
}

/* ---- launch overhead ---------------------------------------------------------- */

enum { kBatch = 256, kRounds = 21 };

typedef struct {
  accel_kernel_t kernel;
  const accel_kernel_arg_t* args;
  size_t num_args;
  accel_launch_config_t cfg;
  CUfunction fn;
  void** params;
  CUstream stream;
} Launcher;

static double accel_batch(const Launcher* l) {
  double t0 = now_ns();
  for (int i = 0; i < kBatch; ++i)
    if (accel_launch_kernel(l->kernel, &l->cfg, l->args, l->num_args) != ACCEL_SUCCESS) {
      OK(accel_launch_kernel(l->kernel, &l->cfg, l->args, l->num_args));
      return -1;
    }
  double t = (now_ns() - t0) / kBatch;
  CU_OK(cu.cuStreamSynchronize(l->stream));
  return t;
}

static double direct_batch(const Launcher* l) {
  double t0 = now_ns();
  for (int i = 0; i < kBatch; ++i)
    if (!CU_OK(cu.cuLaunchKernel(l->fn, 1, 1, 1, 32, 1, 1, 0, l->stream, l->params, NULL)))
      return -1;
  double t = (now_ns() - t0) / kBatch;
  CU_OK(cu.cuStreamSynchronize(l->stream));
  return t;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void overhead(const char* what, const Launcher* l) {
  double a[kRounds], d[kRounds];
  accel_batch(l); /* warm both paths */
  direct_batch(l);
  for (int r = 0; r < kRounds; ++r) {
    a[r] = accel_batch(l);
    d[r] = direct_batch(l);
    if (a[r] < 0 || d[r] < 0) return;
  }
  qsort(a, kRounds, sizeof a[0], cmp_double);
  qsort(d, kRounds, sizeof d[0], cmp_double);
  const double ratio = a[kRounds / 2] / d[kRounds / 2];
  printf(
      "  %-32s accel_launch_kernel %7.1f ns, cuLaunchKernel %7.1f ns per launch "
      "(medians of %d x %d): %.3fx, %s\n",
      what, a[kRounds / 2], d[kRounds / 2], kRounds, kBatch, ratio,
      ratio <= 1.05 ? "target <= 1.05x met" : "OVER the 1.05x target");
}

static void measure_overhead(const unsigned char* ptx, size_t size, accel_kernel_t empty,
                             accel_kernel_t saxpy, accel_stream_t s) {
  accel_native_handle_t dh, sh;
  memset(&dh, 0, sizeof dh);
  memset(&sh, 0, sizeof sh);
  dh.struct_size = sh.struct_size = sizeof dh;
  if (!OK(accel_device_native_handle(0, &dh)) || !OK(accel_stream_native_handle(s, &sh))) return;
  CUcontext prev = NULL;
  CU_OK(cu.cuCtxGetCurrent(&prev));
  CU_OK(cu.cuCtxSetCurrent((CUcontext)dh.context));
  /* The same PTX, loaded by the driver itself (NUL-terminated, as it needs). */
  char* text = malloc(size + 1);
  if (text == NULL) abort();
  memcpy(text, ptx, size);
  text[size] = '\0';
  CUmodule mod = NULL;
  CUfunction fn_empty = NULL, fn_saxpy = NULL;
  if (CU_OK(cu.cuModuleLoadDataEx(&mod, text, 0, NULL, NULL)) &&
      CU_OK(cu.cuModuleGetFunction(&fn_empty, mod, "empty")) &&
      CU_OK(cu.cuModuleGetFunction(&fn_saxpy, mod, "saxpy"))) {
    void* x = NULL;
    void* y = NULL;
    if (OK(accel_malloc(0, 64, &x)) && OK(accel_malloc(0, 64, &y))) {
      OK(accel_memset_async(x, 0, 64, s));
      OK(accel_memset_async(y, 0, 64, s));
      OK(accel_stream_synchronize(s));
      printf("\n--- launch overhead on one CUstream (grid 1, block 32; host time per launch)\n");
      Launcher le = {
          empty, NULL, 0, config(1, 1, 1, 32, 1, 1, s), fn_empty, NULL, (CUstream)sh.handle};
      overhead("empty (no parameters)", &le);
      const float alpha = 2.0f;
      const uint32_t n = 1;
      CUdeviceptr cx = (CUdeviceptr)(uintptr_t)x, cy = (CUdeviceptr)(uintptr_t)y;
      accel_kernel_arg_t args[4] = {value_arg(&alpha, sizeof alpha), ptr_arg(x), ptr_arg(y),
                                    value_arg(&n, sizeof n)};
      void* params[4] = {(void*)&alpha, &cx, &cy, (void*)&n};
      Launcher ls = {
          saxpy, args, 4, config(1, 1, 1, 32, 1, 1, s), fn_saxpy, params, (CUstream)sh.handle};
      overhead("saxpy (4 parameters)", &ls);
    }
    accel_free(x);
    accel_free(y);
  }
  if (mod != NULL) CU_OK(cu.cuModuleUnload(mod));
  free(text);
  CU_OK(cu.cuCtxSetCurrent(prev));
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc != 2) {
    printf("usage: %s <build>/kernels/accel_kernels.ptx\n", argv[0]);
    return 2;
  }
  size_t size = 0;
  unsigned char* ptx = read_file(argv[1], &size);
  if (ptx == NULL) {
    printf(
        "FAIL: no PTX at %s (the build had no nvcc: kernels/meson.build, -Dnvcc), so no "
        "kernel can run\n",
        argv[1]);
    return 1;
  }
  if (load_driver() == NULL) return 100;
  int32_t n_dev = accel_device_count();
  const char* backend = accel_current_accelerator();
  printf("accel %s: backend %s, %d device(s); PTX %s (%zu bytes)\n", accel_version(),
         backend ? backend : "(none)", (int)n_dev, argv[1], size);
  if (backend == NULL || strcmp(backend, "cuda") != 0 || n_dev < 1) {
    printf("FAIL: the cuda backend is not the current accelerator: %s\n", accel_selection_reason());
    return 101;
  }
  uint64_t formats = 0;
  if (OK(accel_device_module_formats(0, &formats)))
    CHECK((formats & ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_PTX)) != 0,
          "device 0 does not take PTX (formats 0x%llx)", (unsigned long long)formats);

  accel_module_image_t image = {ACCEL_MODULE_FORMAT_PTX, ptx, size};
  accel_module_t m = NULL;
  double t0 = now_ns();
  accel_status_t st = accel_module_load(0, &image, 1, NULL, &m);
  double load_ms = (now_ns() - t0) / 1e6;
  size_t log_len = 0;
  accel_module_build_log(NULL, 0, &log_len);
  char* log = malloc(log_len + 1);
  if (log != NULL && accel_module_build_log(log, log_len + 1, &log_len) == ACCEL_SUCCESS)
    printf("accel_module_load: %s in %.1f ms; build log (%zu bytes):\n%s\n", accel_status_name(st),
           load_ms, log_len, log);
  free(log);
  if (!OK(st)) {
    free(ptx);
    return failures;
  }
  accel_kernel_t add = get_kernel(m, "vector_add");
  accel_kernel_t saxpy = get_kernel(m, "saxpy");
  accel_kernel_t reduce = get_kernel(m, "reduce_sum");
  accel_kernel_t index = get_kernel(m, "index_3d");
  accel_kernel_t empty = get_kernel(m, "empty");
  accel_stream_t s = NULL;
  if (add && saxpy && reduce && index && empty && OK(accel_stream_create(0, 0, &s))) {
    check_vector_add_saxpy(add, saxpy, s);
    check_reduce_sum(reduce, s);
    check_index_3d(index, s, 64, 1, 1, 256, 1, 1);
    check_index_3d(index, s, 16, 8, 1, 16, 16, 1);
    check_index_3d(index, s, 4, 3, 5, 8, 4, 2);
    measure_overhead(ptx, size, empty, saxpy, s);
    OK(accel_stream_synchronize(s));
    OK(accel_stream_destroy(s));
  }
  OK(accel_module_unload(m));
  free(ptx);
  printf("\n%s: %d failed check(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures > 255 ? 255 : failures;
}
