/* tests/gpu/cuda_interop.c - the CUDA backend's ABI 1.1 groups on a real
 * NVIDIA GPU, built and run by tests/gpu/cuda.sh (not by meson: it needs the
 * real driver). Uses accel.h and the CUDA Driver API only (cuda.h for the
 * prototypes; no toolkit library, no nvcc): the driver is dlopen()ed, the
 * same file the plugin opens (ACCEL_CUDA_DRIVER, else libcuda.so.1), so both
 * talk to one driver instance.
 *
 *  1. export: cuMemsetD8Async on the exported CUstream between two accel
 *     copies (the stream held shut by an accel host function until all three
 *     are queued, so any other order would show in the data);
 *  2. wrap: a CUstream made with the Driver API, wrapped with
 *     accel_stream_from_native, borrowed and owned; refusals;
 *  3. H2D bandwidth from pageable, registered and pinned memory, timed with
 *     accel timing events, and how long each enqueue took on the host;
 *  4. every device attribute;
 *  5. with two GPUs: peer access and a peer copy, checked and timed.
 *
 * Exit status: the number of failed checks (0: all passed). ACCEL_BW_MB
 * sets the bandwidth buffer size (default 256 MiB). */
#define _GNU_SOURCE
#include <accel/accel.h>
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STR2(x) #x
#define STR(x) STR2(x)

/* The driver entry points used here, typed by cuda.h's prototypes (the
 * member is the versioned symbol where cuda.h maps one, e.g.
 * cuStreamDestroy -> cuStreamDestroy_v2, and so is the name looked up). */
static struct {
  __typeof__(&cuGetErrorName) cuGetErrorName;
  __typeof__(&cuCtxGetCurrent) cuCtxGetCurrent;
  __typeof__(&cuCtxSetCurrent) cuCtxSetCurrent;
  __typeof__(&cuStreamCreateWithPriority) cuStreamCreateWithPriority;
  __typeof__(&cuStreamDestroy) cuStreamDestroy;
  __typeof__(&cuStreamQuery) cuStreamQuery;
  __typeof__(&cuStreamSynchronize) cuStreamSynchronize;
  __typeof__(&cuMemsetD8Async) cuMemsetD8Async;
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

/* An accel call that must succeed; on failure counts it and says why. */
#define OK(expr) ok_((expr), #expr, __LINE__)
static int ok_(accel_status_t st, const char* what, int line) {
  if (st == ACCEL_SUCCESS) return 1;
  ++failures;
  printf("FAIL line %d: %s -> %s: %s\n", line, what, accel_status_name(st), accel_last_error());
  return 0;
}

/* A driver call that must succeed. */
#define CU_OK(expr) cu_ok_((expr), #expr, __LINE__)
static int cu_ok_(CUresult rc, const char* what, int line) {
  if (rc == CUDA_SUCCESS) return 1;
  const char* name = NULL;
  if (cu.cuGetErrorName == NULL || cu.cuGetErrorName(rc, &name) != CUDA_SUCCESS) name = "?";
  ++failures;
  printf("FAIL line %d: %s -> %s (%d)\n", line, what, name, (int)rc);
  return 0;
}

static void* load_driver(void) {
  const char* path = getenv("ACCEL_CUDA_DRIVER");
  if (path == NULL || *path == '\0') path = "libcuda.so.1";
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
  LOAD(cuStreamCreateWithPriority);
  LOAD(cuStreamDestroy);
  LOAD(cuStreamQuery);
  LOAD(cuStreamSynchronize);
  LOAD(cuMemsetD8Async);
#undef LOAD
  printf("driver: %s\n", path);
  return h;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static CUdeviceptr dptr(const void* p) { return (CUdeviceptr)(uintptr_t)p; }

/* Holds a stream shut until opened (10 s at most), from an accel host
 * function. */
typedef struct {
  pthread_mutex_t m;
  pthread_cond_t cv;
  int open;
} Gate;

static void gate_init(Gate* g) {
  pthread_mutex_init(&g->m, NULL);
  pthread_cond_init(&g->cv, NULL);
  g->open = 0;
}
static void gate_wait(void* p) {
  Gate* g = (Gate*)p;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  pthread_mutex_lock(&g->m);
  while (!g->open && pthread_cond_timedwait(&g->cv, &g->m, &until) == 0) {
  }
  pthread_mutex_unlock(&g->m);
}
static void gate_open(Gate* g) {
  pthread_mutex_lock(&g->m);
  g->open = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->m);
}

static void count_up(void* p) { __atomic_add_fetch((int*)p, 1, __ATOMIC_SEQ_CST); }

static accel_native_handle_t stream_handle(accel_stream_t s) {
  accel_native_handle_t h;
  memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  OK(accel_stream_native_handle(s, &h));
  return h;
}

static void fill(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(i * 7 + seed);
}

/* Bytes [lo, hi) must be `v`, the rest as fill(seed) wrote them. */
static size_t first_wrong(const unsigned char* p, size_t n, unsigned seed, size_t lo, size_t hi,
                          unsigned char v) {
  for (size_t i = 0; i < n; ++i) {
    unsigned char want = (i >= lo && i < hi) ? v : (unsigned char)(i * 7 + seed);
    if (p[i] != want) return i;
  }
  return n;
}

/* Accel H2D, the program's cuMemsetD8Async on `cs` (with `ctx` current),
 * accel D2H, all queued while `s` is held shut; `sync_native` waits with
 * cuStreamSynchronize instead of accel. */
static void memset_between_copies(accel_stream_t s, CUstream cs, CUcontext ctx, int32_t dev,
                                  size_t n, int sync_native, const char* what) {
  unsigned char *src = NULL, *dst = NULL;
  void* d = NULL;
  if (!OK(accel_host_malloc(n, 0, (void**)&src)) || !OK(accel_host_malloc(n, 0, (void**)&dst)) ||
      !OK(accel_malloc(dev, n, &d)))
    return;
  fill(src, n, 3);
  memset(dst, 0, n);
  const size_t lo = n / 4, hi = n / 2;
  Gate gate;
  gate_init(&gate);
  OK(accel_launch_host_func(s, gate_wait, &gate));
  OK(accel_memcpy_async(d, src, n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  CUcontext prev = NULL;
  CU_OK(cu.cuCtxGetCurrent(&prev));
  CU_OK(cu.cuCtxSetCurrent(ctx));
  CU_OK(cu.cuMemsetD8Async(dptr(d) + lo, 0xA5, hi - lo, cs));
  CU_OK(cu.cuCtxSetCurrent(prev));
  OK(accel_memcpy_async(dst, d, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY, "%s: the stream ran while held", what);
  gate_open(&gate);
  if (sync_native) {
    CU_OK(cu.cuCtxSetCurrent(ctx));
    CU_OK(cu.cuStreamSynchronize(cs));
    CU_OK(cu.cuCtxSetCurrent(prev));
  } else {
    OK(accel_stream_synchronize(s));
  }
  size_t bad = first_wrong(dst, n, 3, lo, hi, 0xA5);
  CHECK(bad == n, "%s: byte %zu is 0x%02x: the driver's memset ran out of accel's order", what, bad,
        bad < n ? dst[bad] : 0);
  if (bad == n) printf("ok: %s\n", what);
  OK(accel_free(d));
  OK(accel_host_free(src));
  OK(accel_host_free(dst));
}

static void export_streams(int32_t dev) {
  printf("\n--- 1. exported streams (device %d)\n", (int)dev);
  accel_stream_t s = NULL;
  if (!OK(accel_stream_create(dev, 0, &s))) return;
  accel_native_handle_t h = stream_handle(s);
  CHECK(h.type == ACCEL_NATIVE_CUDA, "type %d", (int)h.type);
  CHECK(h.ordinal == dev, "ordinal %lld", (long long)h.ordinal);
  printf("stream %p: CUstream %p, context %p, CUdevice %lld\n", (void*)s, h.handle, h.context,
         (long long)h.ordinal);
  memset_between_copies(s, (CUstream)h.handle, (CUcontext)h.context, dev, 64 << 20, 0,
                        "cuMemsetD8Async on a created stream's CUstream between accel copies");
  OK(accel_stream_destroy(s));

  accel_stream_t def = NULL;
  if (!OK(accel_current_stream(dev, &def))) return;
  h = stream_handle(def);
  CHECK(h.handle == (void*)CU_STREAM_LEGACY, "default stream handle %p", h.handle);
  memset_between_copies(def, (CUstream)h.handle, (CUcontext)h.context, dev, 64 << 20, 0,
                        "cuMemsetD8Async on CU_STREAM_LEGACY (the default stream) between accel "
                        "copies");
}

static void wrap_streams(int32_t n_dev) {
  printf("\n--- 2. streams from the program's CUstream\n");
  accel_native_handle_t dh;
  memset(&dh, 0, sizeof dh);
  dh.struct_size = sizeof dh;
  if (!OK(accel_device_native_handle(0, &dh))) return;
  CUcontext ctx = (CUcontext)dh.context, prev = NULL;
  CU_OK(cu.cuCtxGetCurrent(&prev));
  CU_OK(cu.cuCtxSetCurrent(ctx));
  CUstream ext = NULL;
  if (!CU_OK(cu.cuStreamCreateWithPriority(&ext, CU_STREAM_NON_BLOCKING, 0))) return;
  CU_OK(cu.cuCtxSetCurrent(prev));

  accel_native_handle_t in;
  memset(&in, 0, sizeof in);
  in.struct_size = sizeof in;
  in.type = ACCEL_NATIVE_CUDA;
  in.handle = ext;
  accel_stream_t w = NULL;
  if (!OK(accel_stream_from_native(0, &in, 0, &w))) return;
  CHECK(stream_handle(w).handle == (void*)ext, "the wrapper exports another CUstream");
  memset_between_copies(w, ext, ctx, 0, 16 << 20, 1,
                        "a wrapped CUstream: driver memset between accel copies, waited for "
                        "with cuStreamSynchronize");
  int ran = 0;
  accel_event_t e = NULL;
  OK(accel_launch_host_func(w, count_up, &ran));
  OK(accel_event_create(0, ACCEL_EVENT_DEFAULT, &e));
  OK(accel_event_record(e, w));
  OK(accel_event_synchronize(e));
  CHECK(__atomic_load_n(&ran, __ATOMIC_SEQ_CST) == 1,
        "the host function on the wrapper ran %d times", ran);
  OK(accel_event_destroy(e));
  OK(accel_stream_destroy(w));
  CU_OK(cu.cuCtxSetCurrent(ctx));
  CHECK(cu.cuStreamQuery(ext) == CUDA_SUCCESS, "the borrowed CUstream is gone after the wrapper");
  CU_OK(cu.cuStreamDestroy(ext));
  printf("ok: borrowed CUstream wrapped, used, unwrapped, still the program's\n");

  CUstream owned = NULL;
  CU_OK(cu.cuStreamCreateWithPriority(&owned, CU_STREAM_NON_BLOCKING, 0));
  CU_OK(cu.cuCtxSetCurrent(prev));
  in.handle = owned;
  if (OK(accel_stream_from_native(0, &in, ACCEL_NATIVE_TAKE_OWNERSHIP, &w))) {
    memset_between_copies(w, owned, ctx, 0, 1 << 20, 0, "an owned wrapped CUstream");
    OK(accel_stream_destroy(w)); /* destroys `owned` too */
    printf("ok: owned CUstream destroyed by accel_stream_destroy\n");
  }

  in.handle = CU_STREAM_PER_THREAD;
  accel_status_t st = accel_stream_from_native(0, &in, 0, &w);
  CHECK(st == ACCEL_ERROR_INVALID_ARGUMENT, "CU_STREAM_PER_THREAD: %s", accel_status_name(st));
  if (n_dev >= 2) {
    accel_stream_t s1 = NULL;
    if (OK(accel_stream_create(1, 0, &s1))) {
      accel_native_handle_t h1 = stream_handle(s1);
      st = accel_stream_from_native(0, &h1, 0, &w);
      CHECK(st == ACCEL_ERROR_DEVICE_MISMATCH, "device 1's stream as device 0's: %s",
            accel_status_name(st));
      if (st != ACCEL_SUCCESS) printf("ok: refused as expected: %s\n", accel_last_error());
      OK(accel_stream_destroy(s1));
    }
  }
}

/* H2D of `n` bytes from `src`, `reps` times, timed with events on `s`. */
static double h2d_gbps(accel_stream_t s, void* d, const void* src, size_t n, int reps,
                       double* enqueue_ms) {
  accel_event_t a = NULL, b = NULL;
  float ms = 0;
  if (!OK(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &a)) ||
      !OK(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &b)))
    return 0;
  OK(accel_memcpy_async(d, src, n, ACCEL_MEMCPY_HOST_TO_DEVICE, s)); /* warm-up */
  OK(accel_stream_synchronize(s));
  OK(accel_event_record(a, s));
  double t0 = now_ms();
  for (int i = 0; i < reps; ++i) OK(accel_memcpy_async(d, src, n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  *enqueue_ms = (now_ms() - t0) / reps;
  OK(accel_event_record(b, s));
  OK(accel_event_synchronize(b));
  OK(accel_event_elapsed_time(a, b, &ms));
  OK(accel_event_destroy(a));
  OK(accel_event_destroy(b));
  return ms > 0 ? (double)n * reps / (ms * 1e6) : 0;
}

static void bandwidth(void) {
  const char* mb = getenv("ACCEL_BW_MB");
  size_t n = (size_t)(mb != NULL && atoi(mb) > 0 ? atoi(mb) : 256) << 20;
  const int reps = 5;
  printf("\n--- 3. host-to-device bandwidth, %zu MiB x %d, device 0\n", n >> 20, reps);
  accel_stream_t s = NULL;
  void* d = NULL;
  unsigned char* pageable = malloc(n);
  void* pinned = NULL;
  if (pageable == NULL || !OK(accel_stream_create(0, 0, &s)) || !OK(accel_malloc(0, n, &d)) ||
      !OK(accel_host_malloc(n, 0, &pinned))) {
    free(pageable);
    return;
  }
  memset(pageable, 1, n); /* fault the pages in */
  memset(pinned, 1, n);
  double q = 0;
  double g = h2d_gbps(s, d, pageable, n, reps, &q);
  printf("pageable   (malloc)              : %7.2f GB/s, each enqueue returned after %8.3f ms\n", g,
         q);
  if (OK(accel_host_register(pageable, n, 0))) {
    g = h2d_gbps(s, d, pageable, n, reps, &q);
    printf("registered (accel_host_register) : %7.2f GB/s, each enqueue returned after %8.3f ms\n",
           g, q);
    OK(accel_host_unregister(pageable));
  }
  g = h2d_gbps(s, d, pinned, n, reps, &q);
  printf("pinned     (accel_host_malloc)   : %7.2f GB/s, each enqueue returned after %8.3f ms\n", g,
         q);
  OK(accel_host_free(pinned));
  OK(accel_free(d));
  OK(accel_stream_destroy(s));
  free(pageable);
}

static void attributes(int32_t n_dev) {
  printf("\n--- 4. device attributes\n");
  for (int32_t dev = 0; dev < n_dev; ++dev) {
    accel_device_properties_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    if (OK(accel_get_device_properties(dev, &p)))
      printf("device %d: %s, %s\n", (int)dev, p.name, p.architecture);
    int answered = 0;
    for (int a = 0; a < ACCEL_DEVICE_ATTR_COUNT; ++a) {
      int64_t v = 0;
      accel_status_t st = accel_device_get_attribute(dev, (accel_device_attr_t)a, &v);
      const char* name = accel_device_attr_name((accel_device_attr_t)a);
      if (st == ACCEL_SUCCESS) {
        printf("  %-28s %lld\n", name, (long long)v);
        ++answered;
      } else if (st == ACCEL_ERROR_NOT_SUPPORTED) {
        printf("  %-28s not supported: %s\n", name, accel_last_error());
      } else {
        OK(st);
      }
    }
    CHECK(answered >= 20, "device %d answers only %d attributes", (int)dev, answered);
  }
}

static void peer(int32_t n_dev) {
  printf("\n--- 5. peer copies\n");
  if (n_dev < 2) {
    printf("skipped: one GPU (a peer copy needs two)\n");
    return;
  }
  int32_t can01 = 0, can10 = 0;
  OK(accel_device_can_access_peer(0, 1, &can01));
  OK(accel_device_can_access_peer(1, 0, &can10));
  printf("can access peer: 0->1 %d, 1->0 %d\n", (int)can01, (int)can10);
  if (can01) OK(accel_device_enable_peer_access(0, 1));
  if (can10) OK(accel_device_enable_peer_access(1, 0));
  if (can01) OK(accel_device_enable_peer_access(0, 1)); /* again: not an error */
  const size_t n = (size_t)256 << 20;
  const int reps = 5;
  void *a = NULL, *b = NULL;
  unsigned char* host = NULL;
  accel_stream_t s0 = NULL;
  if (!OK(accel_malloc(0, n, &a)) || !OK(accel_malloc(1, n, &b)) ||
      !OK(accel_host_malloc(n, 0, (void**)&host)) || !OK(accel_stream_create(0, 0, &s0)))
    return;
  fill(host, n, 9);
  OK(accel_memcpy_async(a, host, n, ACCEL_MEMCPY_HOST_TO_DEVICE, s0));
  accel_event_t e0 = NULL, e1 = NULL;
  float ms = 0;
  OK(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &e0));
  OK(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &e1));
  OK(accel_event_record(e0, s0));
  for (int i = 0; i < reps; ++i) OK(accel_memcpy_peer_async(b, 1, a, 0, n, s0));
  OK(accel_event_record(e1, s0));
  OK(accel_event_synchronize(e1));
  OK(accel_event_elapsed_time(e0, e1, &ms));
  printf("peer copy 0->1 (%s): %.2f GB/s\n", can01 ? "peer access enabled" : "no P2P: staged",
         ms > 0 ? (double)n * reps / (ms * 1e6) : 0.0);
  memset(host, 0, n);
  accel_stream_t s1 = NULL;
  if (OK(accel_current_stream(1, &s1))) {
    OK(accel_memcpy_async(host, b, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s1));
    OK(accel_stream_synchronize(s1));
    size_t bad = first_wrong(host, n, 9, 0, 0, 0);
    CHECK(bad == n, "peer copy: byte %zu is wrong", bad);
    if (bad == n) printf("ok: the peer copy arrived intact\n");
  }
  OK(accel_event_destroy(e0));
  OK(accel_event_destroy(e1));
  OK(accel_stream_destroy(s0));
  OK(accel_host_free(host));
  OK(accel_free(a));
  OK(accel_free(b));
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
  export_streams(0);
  if (n_dev >= 2) export_streams(1);
  wrap_streams(n_dev);
  bandwidth();
  attributes(n_dev);
  peer(n_dev);
  printf("\n%s: %d failed check(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures > 255 ? 255 : failures;
}
