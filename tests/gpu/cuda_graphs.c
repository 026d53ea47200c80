/* tests/gpu/cuda_graphs.c - accel's graphs on a real NVIDIA GPU through the
 * CUDA plugin's native graph group (ABI 1.4), built and run by
 * tests/gpu/cuda.sh (not by meson: it needs the real driver). Uses accel.h
 * and the CUDA Driver API only; the driver is dlopen()ed, the same file the
 * plugin opens (ACCEL_CUDA_DRIVER, else libcuda.so.1).
 *
 * Usage: cuda-graphs PTX_FILE (<build>/kernels/accel_kernels.ptx).
 *
 * On device 0:
 *   - prints what the device says of how it replays graphs and checks it
 *     is "native (CUDA graphs)" (ACCEL_GRAPHS=recorder: not checked);
 *   - a graph of 64 saxpy launches on one element, 100 replays, the result
 *     checked (small integers: exact);
 *   - times 64 launches of `empty` three ways, each round issued and then
 *     synchronized, inside the timing (what a graph saves is launch work on
 *     both sides): 64 accel_launch_kernel calls, one accel_graph_replay of
 *     their capture, and one cuGraphLaunch of the same 64 launches captured
 *     by the driver directly (cuStreamBeginCapture on the same CUstream);
 *     21 rounds each, interleaved, medians reported, not checked.
 *
 * Exit status: the number of failed checks. */
#define _GNU_SOURCE
#include <accel/accel.h>
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STR2(x) #x
#define STR(x) STR2(x)

enum { kKernels = 64, kRounds = 21 };

static struct {
  __typeof__(&cuGetErrorName) cuGetErrorName;
  __typeof__(&cuCtxGetCurrent) cuCtxGetCurrent;
  __typeof__(&cuCtxSetCurrent) cuCtxSetCurrent;
  __typeof__(&cuModuleLoadDataEx) cuModuleLoadDataEx;
  __typeof__(&cuModuleGetFunction) cuModuleGetFunction;
  __typeof__(&cuModuleUnload) cuModuleUnload;
  __typeof__(&cuLaunchKernel) cuLaunchKernel;
  __typeof__(&cuStreamSynchronize) cuStreamSynchronize;
  __typeof__(&cuStreamBeginCapture) cuStreamBeginCapture;
  __typeof__(&cuStreamEndCapture) cuStreamEndCapture;
  __typeof__(&cuGraphInstantiateWithFlags) cuGraphInstantiateWithFlags;
  __typeof__(&cuGraphLaunch) cuGraphLaunch;
  __typeof__(&cuGraphExecDestroy) cuGraphExecDestroy;
  __typeof__(&cuGraphDestroy) cuGraphDestroy;
} cu;

static int failures = 0;

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

static int load_driver(void) {
  const char* path = getenv("ACCEL_CUDA_DRIVER");
  if (path == NULL || *path == '\0') path = "libcuda.so.1";
  void* h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (h == NULL) {
    printf("cannot load the CUDA driver %s: %s\n", path, dlerror());
    return 0;
  }
#define LOAD(name)                                         \
  do {                                                     \
    *(void**)(&cu.name) = dlsym(h, STR(name));             \
    if (cu.name == NULL) {                                 \
      printf("the driver %s lacks %s\n", path, STR(name)); \
      return 0;                                            \
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
  LOAD(cuStreamBeginCapture);
  LOAD(cuStreamEndCapture);
  LOAD(cuGraphInstantiateWithFlags);
  LOAD(cuGraphLaunch);
  LOAD(cuGraphExecDestroy);
  LOAD(cuGraphDestroy);
#undef LOAD
  printf("driver: %s\n", path);
  return 1;
}

/* The whole file plus a NUL (the driver's own load needs one; accel's does not). */
static char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  char* data = NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n + 1)) != NULL) {
    if (fread(data, 1, (size_t)n, f) == (size_t)n) {
      data[n] = '\0';
      *size = (size_t)n;
    } else {
      free(data);
      data = NULL;
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

static accel_launch_config_t config(accel_stream_t s) {
  accel_launch_config_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.grid.x = c.grid.y = c.grid.z = 1;
  c.block.x = 32, c.block.y = c.block.z = 1;
  c.stream = s;
  return c;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* The device's words; a check that they say native CUDA graphs. */
static void check_support(void) {
  accel_device_properties_t p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  if (!OK(accel_get_device_properties(0, &p))) return;
  printf("device 0 graphs: %s\n", p.graphs);
  const char* forced = getenv("ACCEL_GRAPHS");
  if (forced != NULL && strcmp(forced, "recorder") == 0) return;
  if (strcmp(p.graphs, "native (CUDA graphs)") != 0) {
    ++failures;
    printf("FAIL: device 0 says '%s', not 'native (CUDA graphs)'\n", p.graphs);
  }
}

/* 64 saxpy launches on one element captured, 100 replays: y = 64 * 100 * x. */
static void check_saxpy_graph(accel_kernel_t saxpy, accel_stream_t s) {
  const float one = 1.0f, x_host = 1.0f, zero = 0.0f;
  const uint32_t n = 1;
  void *x = NULL, *y = NULL;
  accel_graph_t g = NULL;
  if (OK(accel_malloc(0, sizeof(float), &x)) && OK(accel_malloc(0, sizeof(float), &y)) &&
      OK(accel_memcpy_async(x, &x_host, sizeof x_host, ACCEL_MEMCPY_HOST_TO_DEVICE, s)) &&
      OK(accel_memcpy_async(y, &zero, sizeof zero, ACCEL_MEMCPY_HOST_TO_DEVICE, s)) &&
      OK(accel_stream_synchronize(s)) &&
      OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0))) {
    accel_launch_config_t c = config(s);
    accel_kernel_arg_t args[4] = {{ACCEL_KERNEL_ARG_VALUE, sizeof one, &one},
                                  {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof x, x},
                                  {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof y, y},
                                  {ACCEL_KERNEL_ARG_VALUE, sizeof n, &n}};
    for (int i = 0; i < kKernels; ++i) OK(accel_launch_kernel(saxpy, &c, args, 4));
    if (OK(accel_stream_end_capture(s, &g))) {
      for (int r = 0; r < 100; ++r) OK(accel_graph_replay(g, s));
      float got = 0;
      if (OK(accel_memcpy_async(&got, y, sizeof got, ACCEL_MEMCPY_DEVICE_TO_HOST, s)) &&
          OK(accel_stream_synchronize(s)) && got != (float)(kKernels * 100)) {
        ++failures;
        printf("FAIL: 100 replays of 64 saxpy gave %g, not %d\n", got, kKernels * 100);
      }
      OK(accel_graph_destroy(g));
    }
  }
  accel_free(x);
  accel_free(y);
}

typedef struct {
  accel_kernel_t empty;
  accel_stream_t s;
  accel_graph_t graph;
  CUfunction fn;
  CUstream cs;
  CUgraphExec exec;
} Bench;

/* One round of one way, issued and synchronized; ns, or -1 on failure. */
static double round_ns(const Bench* b, int way) {
  accel_launch_config_t c = config(b->s);
  double t0 = now_ns();
  if (way == 0) {
    for (int i = 0; i < kKernels; ++i)
      if (!OK(accel_launch_kernel(b->empty, &c, NULL, 0))) return -1;
  } else if (way == 1) {
    if (!OK(accel_graph_replay(b->graph, b->s))) return -1;
  } else if (!CU_OK(cu.cuGraphLaunch(b->exec, b->cs))) {
    return -1;
  }
  if (!OK(accel_stream_synchronize(b->s))) return -1;
  return now_ns() - t0;
}

static void time_ways(Bench* b) {
  static const char* const names[3] = {"64 accel_launch_kernel", "accel_graph_replay (64)",
                                       "cuGraphLaunch (64, captured directly)"};
  double t[3][kRounds];
  for (int w = 0; w < 3; ++w) round_ns(b, w); /* warm: the first replay instantiates */
  for (int r = 0; r < kRounds; ++r)
    for (int w = 0; w < 3; ++w)
      if ((t[w][r] = round_ns(b, w)) < 0) return;
  printf("\n--- 64 empty kernels, issue + synchronize (medians of %d rounds)\n", kRounds);
  for (int w = 0; w < 3; ++w) {
    qsort(t[w], kRounds, sizeof t[w][0], cmp_double);
    printf("  %-40s %9.1f us\n", names[w], t[w][kRounds / 2] / 1e3);
  }
  printf("  accel replay / direct cuGraphLaunch: %.3fx; launches / replay: %.3fx\n",
         t[1][kRounds / 2] / t[2][kRounds / 2], t[0][kRounds / 2] / t[1][kRounds / 2]);
}

/* The same 64 launches captured by the driver on the accel stream's CUstream. */
static int direct_graph(Bench* b) {
  CUgraph g = NULL;
  if (!CU_OK(cu.cuStreamBeginCapture(b->cs, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))) return 0;
  for (int i = 0; i < kKernels; ++i)
    CU_OK(cu.cuLaunchKernel(b->fn, 1, 1, 1, 32, 1, 1, 0, b->cs, NULL, NULL));
  if (!CU_OK(cu.cuStreamEndCapture(b->cs, &g))) return 0;
  int ok = CU_OK(cu.cuGraphInstantiateWithFlags(&b->exec, g, 0));
  CU_OK(cu.cuGraphDestroy(g));
  return ok;
}

static void bench(accel_kernel_t empty, accel_stream_t s, const char* ptx) {
  Bench b = {empty, s, NULL, NULL, NULL, NULL};
  accel_native_handle_t dh, sh;
  memset(&dh, 0, sizeof dh);
  memset(&sh, 0, sizeof sh);
  dh.struct_size = sh.struct_size = sizeof dh;
  if (!OK(accel_device_native_handle(0, &dh)) || !OK(accel_stream_native_handle(s, &sh))) return;
  b.cs = (CUstream)sh.handle;
  CUcontext prev = NULL;
  CU_OK(cu.cuCtxGetCurrent(&prev));
  CU_OK(cu.cuCtxSetCurrent((CUcontext)dh.context));
  CUmodule mod = NULL;
  accel_launch_config_t c = config(s);
  if (CU_OK(cu.cuModuleLoadDataEx(&mod, ptx, 0, NULL, NULL)) &&
      CU_OK(cu.cuModuleGetFunction(&b.fn, mod, "empty")) && direct_graph(&b) &&
      OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0))) {
    for (int i = 0; i < kKernels; ++i) OK(accel_launch_kernel(empty, &c, NULL, 0));
    if (OK(accel_stream_end_capture(s, &b.graph))) time_ways(&b);
    if (b.graph != NULL) OK(accel_graph_destroy(b.graph));
  }
  OK(accel_stream_synchronize(s));
  if (b.exec != NULL) CU_OK(cu.cuGraphExecDestroy(b.exec));
  if (mod != NULL) CU_OK(cu.cuModuleUnload(mod));
  CU_OK(cu.cuCtxSetCurrent(prev));
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc != 2) {
    printf("usage: %s <build>/kernels/accel_kernels.ptx\n", argv[0]);
    return 2;
  }
  size_t size = 0;
  char* ptx = read_file(argv[1], &size);
  if (ptx == NULL) {
    printf("FAIL: no PTX at %s (the build had no nvcc), so no kernel can run\n", argv[1]);
    return 1;
  }
  if (!load_driver()) return 100;
  const char* backend = accel_current_accelerator();
  if (backend == NULL || strcmp(backend, "cuda") != 0 || accel_device_count() < 1) {
    printf("FAIL: the cuda backend is not the current accelerator: %s\n", accel_selection_reason());
    return 101;
  }
  check_support();
  accel_module_image_t image = {ACCEL_MODULE_FORMAT_PTX, ptx, size};
  accel_module_t m = NULL;
  accel_kernel_t saxpy = NULL, empty = NULL;
  accel_stream_t s = NULL;
  if (OK(accel_module_load(0, &image, 1, NULL, &m)) &&
      OK(accel_module_get_kernel(m, "saxpy", &saxpy)) &&
      OK(accel_module_get_kernel(m, "empty", &empty)) && OK(accel_stream_create(0, 0, &s))) {
    check_saxpy_graph(saxpy, s);
    bench(empty, s, ptx);
    OK(accel_stream_destroy(s));
  }
  if (m != NULL) OK(accel_module_unload(m));
  free(ptx);
  printf("\n%s: %d failed check(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures > 255 ? 255 : failures;
}
