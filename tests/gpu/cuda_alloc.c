/* tests/gpu/cuda_alloc.c - accel's caching allocator on a real NVIDIA GPU,
 * built and run by tests/gpu/cuda.sh (not by meson: it needs the real
 * driver). Uses accel.h and the CUDA Driver API only; the driver is
 * dlopen()ed, the same file the plugin opens (ACCEL_CUDA_DRIVER, else
 * libcuda.so.1), so both talk to one driver instance.
 *
 * On device 0, at 1 MiB and 64 MiB, the cost of one allocation plus its
 * free:
 *   - accel_malloc + accel_free on the current stream, cache warm;
 *   - accel_malloc_async + accel_free_async on a created stream;
 *   - cuMemAlloc + cuMemFree called directly (what accel does per call
 *     with ACCEL_ALLOC_CONF=backend:native);
 *   - cuMemAllocAsync + cuMemFreeAsync called directly on the CUstream of
 *     the same created stream (the driver's own stream-ordered pool).
 * Each is timed in 7 rounds of at least 20 ms: median and min-max per pair.
 * Then the allocator's statistics (accel_memory_stats_list), and
 * accel_empty_cache.
 *
 * Checks (each failure counted): every call succeeds; with backend:caching
 * the timed accel loops reach the driver never (num_device_alloc does not
 * move), with backend:native once per pair; nothing is allocated after the
 * run; accel_empty_cache gives every segment back. Timings are reported,
 * not checked. Exit status: the number of failed checks. */
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

/* The driver entry points used here, typed by cuda.h's prototypes (the
 * member is the versioned symbol where cuda.h maps one, e.g. cuMemAlloc ->
 * cuMemAlloc_v2, and so is the name looked up). */
static struct {
  __typeof__(&cuGetErrorName) cuGetErrorName;
  __typeof__(&cuCtxGetCurrent) cuCtxGetCurrent;
  __typeof__(&cuCtxSetCurrent) cuCtxSetCurrent;
  __typeof__(&cuMemAlloc) cuMemAlloc;
  __typeof__(&cuMemFree) cuMemFree;
  __typeof__(&cuStreamSynchronize) cuStreamSynchronize;
  __typeof__(&cuDeviceGetAttribute) cuDeviceGetAttribute;
  /* Optional (CUDA 11.2): NULL when the driver lacks them. */
  __typeof__(&cuMemAllocAsync) cuMemAllocAsync;
  __typeof__(&cuMemFreeAsync) cuMemFreeAsync;
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
  LOAD(cuMemAlloc);
  LOAD(cuMemFree);
  LOAD(cuStreamSynchronize);
  LOAD(cuDeviceGetAttribute);
#undef LOAD
  *(void**)(&cu.cuMemAllocAsync) = dlsym(h, STR(cuMemAllocAsync));
  *(void**)(&cu.cuMemFreeAsync) = dlsym(h, STR(cuMemFreeAsync));
  printf("driver: %s\n", path);
  return h;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* One allocation and its free; returns 0 on failure (already counted). */
typedef int (*PairFn)(void* ctx, size_t bytes);

typedef struct {
  double median, min, max; /* ns per pair */
  long pairs;              /* pairs timed, all rounds */
  long calls;              /* pairs made, the sizing rounds included */
  int ok;
} Timing;

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* 7 rounds of `n` pairs, `n` grown first until a round takes 20 ms (at most
 * 1 << 20 pairs, so a slow driver still finishes). */
static Timing time_pairs(PairFn fn, void* ctx, size_t bytes) {
  enum { kRounds = 7 };
  Timing t = {0, 0, 0, 0, 0, 0};
  long n = 1;
  for (;;) {
    double t0 = now_ns();
    for (long i = 0; i < n; ++i, ++t.calls)
      if (!fn(ctx, bytes)) return t;
    if (now_ns() - t0 >= 20e6 || n >= (1L << 20)) break;
    n *= 2;
  }
  double per[kRounds];
  for (int r = 0; r < kRounds; ++r) {
    double t0 = now_ns();
    for (long i = 0; i < n; ++i, ++t.calls)
      if (!fn(ctx, bytes)) return t;
    per[r] = (now_ns() - t0) / (double)n;
  }
  qsort(per, kRounds, sizeof per[0], cmp_double);
  t.median = per[kRounds / 2];
  t.min = per[0];
  t.max = per[kRounds - 1];
  t.pairs = n * kRounds;
  t.ok = 1;
  return t;
}

static int64_t stat(const char* name) {
  size_t n = 0;
  if (accel_memory_stats_list(0, NULL, 0, &n) != ACCEL_SUCCESS) return -1;
  accel_memory_stat_t* s = calloc(n, sizeof *s);
  if (s == NULL) return -1;
  int64_t v = -1;
  if (accel_memory_stats_list(0, s, n, &n) == ACCEL_SUCCESS) {
    for (size_t i = 0; i < n; ++i)
      if (strcmp(s[i].name, name) == 0) v = s[i].value;
  }
  free(s);
  return v;
}

/* ---- the pairs ---------------------------------------------------------- */

static int accel_pair(void* ctx, size_t bytes) {
  (void)ctx;
  void* p = NULL;
  return OK(accel_malloc(0, bytes, &p)) && OK(accel_free(p));
}

static int accel_async_pair(void* ctx, size_t bytes) {
  accel_stream_t s = (accel_stream_t)ctx;
  void* p = NULL;
  return OK(accel_malloc_async(bytes, s, &p)) && OK(accel_free_async(p, s));
}

static int cu_pair(void* ctx, size_t bytes) {
  (void)ctx;
  CUdeviceptr p = 0;
  return CU_OK(cu.cuMemAlloc(&p, bytes)) && CU_OK(cu.cuMemFree(p));
}

static int cu_async_pair(void* ctx, size_t bytes) {
  CUstream s = (CUstream)ctx;
  CUdeviceptr p = 0;
  return CU_OK(cu.cuMemAllocAsync(&p, bytes, s)) && CU_OK(cu.cuMemFreeAsync(p, s));
}

static void print_timing(const char* what, Timing t, const Timing* ref) {
  if (!t.ok) {
    printf("  %-44s failed\n", what);
    return;
  }
  printf("  %-44s %10.1f ns (%.1f-%.1f), %ld pairs", what, t.median, t.min, t.max, t.pairs);
  if (ref != NULL && ref->ok && ref->median > 0)
    printf("; %.1fx accel_malloc + accel_free", t.median / ref->median);
  printf("\n");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (load_driver() == NULL) return 100;
  int32_t n_dev = accel_device_count();
  const char* backend = accel_current_accelerator();
  printf("accel %s: backend %s, %d device(s)\n", accel_version(), backend ? backend : "(none)",
         (int)n_dev);
  if (backend == NULL || strcmp(backend, "cuda") != 0 || n_dev < 1) {
    printf("FAIL: the cuda backend is not the current accelerator: %s\n", accel_selection_reason());
    return 101;
  }
  const int caching = strcmp(accel_get_allocator_backend(), "caching") == 0;
  printf("allocator: %s (ACCEL_ALLOC_CONF=%s)\n", accel_get_allocator_backend(),
         getenv("ACCEL_ALLOC_CONF") ? getenv("ACCEL_ALLOC_CONF") : "<unset>");

  /* Driver calls need device 0's primary context current on this thread:
   * the one accel's backend uses (accel_device_native_handle). */
  accel_native_handle_t dh;
  memset(&dh, 0, sizeof dh);
  dh.struct_size = sizeof dh;
  accel_stream_t s = NULL;
  accel_native_handle_t sh;
  memset(&sh, 0, sizeof sh);
  sh.struct_size = sizeof sh;
  if (!OK(accel_device_native_handle(0, &dh)) || !OK(accel_stream_create(0, 0, &s)) ||
      !OK(accel_stream_native_handle(s, &sh)))
    return failures;
  CUcontext prev = NULL;
  CU_OK(cu.cuCtxGetCurrent(&prev));
  CU_OK(cu.cuCtxSetCurrent((CUcontext)dh.context));

  /* cuMemAllocAsync: CUDA 11.2 and a device with memory pools. Any driver
   * accel accepts (11.4 or later) has the entry point, so its absence is a
   * failure unless the driver was named by hand (the fake one has none). */
  const char* no_async = NULL;
  if (cu.cuMemAllocAsync == NULL || cu.cuMemFreeAsync == NULL) {
    no_async = "the driver has no cuMemAllocAsync";
    CHECK(getenv("ACCEL_CUDA_DRIVER") != NULL, "%s lacks cuMemAllocAsync/cuMemFreeAsync",
          driver_path());
  } else {
    int pools = 0;
    if (CU_OK(cu.cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                      (CUdevice)dh.ordinal)) &&
        !pools)
      no_async = "device 0 does not support memory pools";
  }

  const size_t sizes[] = {(size_t)1 << 20, (size_t)64 << 20};
  for (int i = 0; i < 2; ++i) {
    const size_t bytes = sizes[i];
    printf("\n--- %zu MiB: one allocation and its free, device 0 (median of 7 rounds, min-max)\n",
           bytes >> 20);
    /* Warm: the cache holds a block of this size afterwards. */
    accel_pair(NULL, bytes);
    accel_async_pair(s, bytes);
    OK(accel_stream_synchronize(s));
    int64_t vendor0 = stat("num_device_alloc");
    Timing a = time_pairs(accel_pair, NULL, bytes);
    int64_t vendor1 = stat("num_device_alloc");
    Timing as = time_pairs(accel_async_pair, s, bytes);
    int64_t vendor2 = stat("num_device_alloc");
    OK(accel_stream_synchronize(s));
    if (caching) {
      CHECK(vendor1 == vendor0 && vendor2 == vendor1,
            "the cached loops called the driver: num_device_alloc %lld -> %lld -> %lld",
            (long long)vendor0, (long long)vendor1, (long long)vendor2);
    } else {
      CHECK(vendor1 - vendor0 == a.calls, "backend:native: %lld driver allocations for %ld pairs",
            (long long)(vendor1 - vendor0), a.calls);
    }
    Timing c = time_pairs(cu_pair, NULL, bytes);
    Timing ca = {0, 0, 0, 0, 0, 0};
    if (no_async == NULL) {
      ca = time_pairs(cu_async_pair, sh.handle, bytes);
      CU_OK(cu.cuStreamSynchronize((CUstream)sh.handle));
    }
    print_timing(
        caching ? "accel_malloc + accel_free (cached)" : "accel_malloc + accel_free (native)", a,
        NULL);
    print_timing("accel_malloc_async + accel_free_async", as, &a);
    print_timing("cuMemAlloc + cuMemFree", c, &a);
    if (no_async == NULL)
      print_timing("cuMemAllocAsync + cuMemFreeAsync", ca, &a);
    else
      printf("  %-44s not measured: %s\n", "cuMemAllocAsync + cuMemFreeAsync", no_async);
  }
  CU_OK(cu.cuCtxSetCurrent(prev));
  OK(accel_stream_synchronize(s));
  OK(accel_stream_destroy(s));

  printf("\n--- allocator statistics of device 0 after the run (non-zero ones)\n");
  size_t n = 0;
  if (OK(accel_memory_stats_list(0, NULL, 0, &n))) {
    accel_memory_stat_t* st = calloc(n, sizeof *st);
    if (st != NULL && OK(accel_memory_stats_list(0, st, n, &n))) {
      for (size_t i = 0; i < n; ++i)
        if (st[i].value != 0) printf("  %-40s %lld\n", st[i].name, (long long)st[i].value);
      printf("  (%zu statistics)\n", n);
    }
    free(st);
  }
  CHECK(stat("allocated_bytes.all.current") == 0, "%lld bytes still allocated after the run",
        (long long)stat("allocated_bytes.all.current"));
  if (caching) {
    CHECK(stat("reserved_bytes.all.current") > 0, "nothing cached after the run");
    int64_t freed = stat("num_device_free");
    OK(accel_empty_cache(0));
    CHECK(stat("reserved_bytes.all.current") == 0, "%lld bytes reserved after accel_empty_cache",
          (long long)stat("reserved_bytes.all.current"));
    CHECK(stat("num_device_free") > freed, "accel_empty_cache freed no segment");
    printf("accel_empty_cache: %lld segment(s) given back to the driver\n",
           (long long)(stat("num_device_free") - freed));
  }
  printf("\n%s: %d failed check(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures > 255 ? 255 : failures;
}
