// The stream-ordered caching allocator (docs/memory.md) against its floors,
// measured in the same run; tests/bench/run.py holds the targets and turns
// the JSON into the rows of docs/performance.md.
//
//  - BM_alloc_pair/N: accel_malloc + accel_free of N bytes on the current
//    stream with a warm cache, over whatever backend is current (sim, or the
//    opencl backend on PoCL with ACCEL_BACKEND=opencl). run.py runs it again
//    in a process with ACCEL_ALLOC_CONF=backend:native (read once, so it
//    cannot change within a process): the same pair as one vendor
//    allocation and one vendor free, with no cache.
//  - BM_ocl_vendor_svm_pair/N: clSVMAlloc + clSVMFree, what accel's opencl
//    backend does per allocation, called directly in the cl_context of
//    accel's device 0 (accel_device_native_handle), so both sides use the
//    same PoCL device in the same process.
//  - BM_alloc_pair_threads: the pair from 1, 2 and 4 threads, thread i on
//    device i % 2; BM_alloc_pair_one_device: the same with every thread on
//    device 0 (one allocator, one lock). run.py compares the aggregate
//    throughput with one thread's.
//  - BM_alloc_fragmentation: a replayed training trace (described there);
//    counters give reserved / allocated bytes at the peak.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "accel/accel.h"

#ifdef ACCEL_BENCH_OPENCL
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#endif

namespace {

bool need_accel(benchmark::State& state) {
  if (accel_is_available() && accel_device_count() >= 1) return true;
  state.SkipWithError("needs an accelerator (ACCEL_SIM_DEVICES=2 by default)");
  return false;
}

// One statistic of accel_memory_stats_list by name; -1 when absent (a
// misspelt name then shows as an impossible value instead of a plausible 0).
int64_t memory_stat(int32_t device, const char* name) {
  size_t n = 0;
  if (accel_memory_stats_list(device, nullptr, 0, &n) != ACCEL_SUCCESS) return -1;
  std::vector<accel_memory_stat_t> stats(n);
  if (accel_memory_stats_list(device, stats.data(), n, &n) != ACCEL_SUCCESS) return -1;
  for (const accel_memory_stat_t& s : stats) {
    if (std::strcmp(s.name, name) == 0) return s.value;
  }
  return -1;
}

std::string label() {
  const char* b = accel_current_accelerator();
  return std::string(b != nullptr ? b : "none") + ", " + accel_get_allocator_backend();
}

// ---- the pair: target <= 100 ns with the cache -------------------------------

// accel_malloc + accel_free of `bytes` on the calling thread's current device
// and stream; the cache is warmed by one pair first, so with backend:caching
// the loop never reaches the vendor (device_allocs_per_pair shows it: 0, and
// 1 with backend:native).
void alloc_pair_loop(benchmark::State& state, size_t bytes) {
  const int32_t device = accel_current_device_index();
  void* p = nullptr;
  if (accel_malloc(-1, bytes, &p) != ACCEL_SUCCESS || accel_free(p) != ACCEL_SUCCESS) {
    state.SkipWithError(accel_last_error());
    return;
  }
  const int64_t vendor_before = memory_stat(device, "num_device_alloc");
  int failed = 0;
  for (auto _ : state) {
    failed |= accel_malloc(-1, bytes, &p);
    benchmark::DoNotOptimize(p);
    failed |= accel_free(p);
  }
  if (failed != 0) {
    state.SkipWithError("accel_malloc or accel_free failed in the loop");
    return;
  }
  const int64_t vendor = memory_stat(device, "num_device_alloc") - vendor_before;
  state.counters["device_allocs_per_pair"] =
      benchmark::Counter(static_cast<double>(vendor) / static_cast<double>(state.iterations()),
                         benchmark::Counter::kAvgThreads);
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(label());
}

void BM_alloc_pair(benchmark::State& state) {
  if (!need_accel(state)) return;
  alloc_pair_loop(state, static_cast<size_t>(state.range(0)));
}
BENCHMARK(BM_alloc_pair)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20);

// The same 1 MiB pair with `range(0)` other blocks live on the device (512
// bytes each: small-pool blocks, 512 MiB at a million), allocated before the
// timing and freed after it: how the lookups of accel_free (which finds the
// block from its address) and of accel_malloc (which finds a free block of
// the size) grow with the number of live allocations. Balanced trees grow
// with log2(live); run.py checks the growth from 10 to 10k and 1M blocks.
void BM_alloc_pair_live(benchmark::State& state) {
  if (!need_accel(state)) return;
  const auto live = static_cast<size_t>(state.range(0));
  std::vector<void*> blocks(live, nullptr);
  for (auto& b : blocks) {
    if (accel_malloc(-1, 512, &b) != ACCEL_SUCCESS) {
      state.SkipWithError(accel_last_error());
      for (void* q : blocks)
        if (q != nullptr) accel_free(q);
      return;
    }
  }
  alloc_pair_loop(state, size_t{1} << 20);
  state.counters["live_blocks"] = static_cast<double>(live);
  for (void* q : blocks) accel_free(q);
  accel_empty_cache(-1);
}
BENCHMARK(BM_alloc_pair_live)->Arg(10)->Arg(10000)->Arg(1000000);

// ---- the vendor call directly: PoCL ------------------------------------------
#ifdef ACCEL_BENCH_OPENCL
// The cl_context accel's opencl backend allocates device `device`'s memory in.
cl_context accel_context(int32_t device) {
  accel_native_handle_t h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  if (accel_device_native_handle(device, &h) != ACCEL_SUCCESS || h.type != ACCEL_NATIVE_OPENCL)
    return nullptr;
  return static_cast<cl_context>(h.context);
}

// What accel's opencl backend does for one accel_malloc / accel_free with
// backend:native (backends/opencl/memory.cpp: clSVMAlloc with
// CL_MEM_READ_WRITE, default alignment; clSVMFree), in the same context.
void BM_ocl_vendor_svm_pair(benchmark::State& state) {
  const char* b = accel_current_accelerator();
  cl_context ctx = nullptr;
  if (!accel_is_available() || b == nullptr || std::strcmp(b, "opencl") != 0 ||
      (ctx = accel_context(0)) == nullptr) {
    state.SkipWithError("needs accel over opencl (ACCEL_BACKEND=opencl, PoCL)");
    return;
  }
  const auto bytes = static_cast<size_t>(state.range(0));
  void* p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, bytes, 0);
  if (p == nullptr) {
    state.SkipWithError("clSVMAlloc returned NULL");
    return;
  }
  clSVMFree(ctx, p);
  int failed = 0;
  for (auto _ : state) {
    p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, bytes, 0);
    failed |= p == nullptr;
    benchmark::DoNotOptimize(p);
    clSVMFree(ctx, p);
  }
  if (failed != 0) state.SkipWithError("clSVMAlloc returned NULL in the loop");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ocl_vendor_svm_pair)->Arg(1 << 20)->Arg(64 << 20);
#endif

// ---- threads: 1, 2 and 4 (the machine has 2 cores) -------------------------

// Thread i on device i % 2: the allocators, their locks and their statistics
// are per device, so two threads share nothing but the code (target >= 1.8x
// one thread); four put two on each device.
void BM_alloc_pair_threads(benchmark::State& state) {
  if (!need_accel(state)) return;
  if (accel_device_count() < 2) {
    state.SkipWithError("needs two devices (ACCEL_SIM_DEVICES=2)");
    return;
  }
  if (accel_set_device_index(state.thread_index() % 2) != ACCEL_SUCCESS) {
    state.SkipWithError(accel_last_error());
    return;
  }
  alloc_pair_loop(state, static_cast<size_t>(state.range(0)));
}
BENCHMARK(BM_alloc_pair_threads)->Arg(1 << 20)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// Every thread on device 0, on its current (the default) stream: one
// allocator and its lock shared (target: no collapse, >= 1.0x one thread).
void BM_alloc_pair_one_device(benchmark::State& state) {
  if (!need_accel(state)) return;
  if (accel_set_device_index(0) != ACCEL_SUCCESS) {
    state.SkipWithError(accel_last_error());
    return;
  }
  alloc_pair_loop(state, static_cast<size_t>(state.range(0)));
}
BENCHMARK(BM_alloc_pair_one_device)->Arg(1 << 20)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// The same with a stream of each thread's own made current: tells the
// allocator's lock (shared either way) from the default stream's part.
void BM_alloc_pair_one_device_own_stream(benchmark::State& state) {
  if (!need_accel(state)) return;
  accel_stream_t s = nullptr, def = nullptr;
  if (accel_set_device_index(0) != ACCEL_SUCCESS || accel_current_stream(0, &def) != ACCEL_SUCCESS ||
      accel_stream_create(0, 0, &s) != ACCEL_SUCCESS || accel_set_stream(s) != ACCEL_SUCCESS) {
    state.SkipWithError(accel_last_error());
    return;
  }
  alloc_pair_loop(state, static_cast<size_t>(state.range(0)));
  accel_set_stream(def);
  accel_stream_synchronize(s);
  accel_stream_destroy(s);
}
BENCHMARK(BM_alloc_pair_one_device_own_stream)
    ->Arg(1 << 20)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();

// ---- fragmentation: a transformer training trace -----------------------------
//
// The device allocations PyTorch makes when training GPT-2 small (12 layers,
// hidden 768, 12 heads, vocabulary 50257, context 1024; bf16 weights and
// activations, Adam with fp32 states, dropout on) on batches of 2 sequences,
// replayed through accel_malloc / accel_free in autograd's order:
//  - weights: allocated once before the first step and kept (1.5 KiB
//    biases up to the 74 MiB token embedding);
//  - forward, per layer, 25 tensors in order. The ones autograd saves for
//    the backward (layer-norm statistics, Q/K/V, attention probabilities and
//    dropout masks, the MLP's activations, the residual stream) stay live
//    until the backward reaches them; temporaries (a transposed copy of K,
//    raw and scaled attention scores, outputs before dropout and the
//    residual add) die as soon as the next tensor is allocated. Then the
//    final layer norm, the logits (tied to the embedding), their fp32 copy
//    and log-softmax, the loss;
//  - backward, in reverse: for each saved tensor a gradient of its size is
//    allocated, then the previous gradient and the saved tensor are freed.
//    Weight gradients (mixed sizes) are allocated when the backward reaches
//    their layer, in the middle of the activation traffic: long-lived blocks
//    between short-lived ones, which is what splits segments for good;
//  - optimizer: Adam's two fp32 states per weight on the first step (kept),
//    one fp32 temporary per weight each step; then zero_grad with
//    set_to_none (PyTorch's default) frees every weight gradient;
//  - input ids and targets (int64) allocated at the start of each step and
//    freed at its end.
// Six steps. Argument 0: every batch 512 tokens long (fixed shapes, the
// easy case: each step reuses the previous step's blocks exactly).
// Argument 1: lengths 512, 384, 448, 320, 512, 256 (batches padded to their
// longest sequence), so activation sizes change from step to step, which is
// where a caching allocator fragments. Peak about 3 GiB: the benchmark sets
// ACCEL_SIM_MEMORY to 16 GiB (sim allocates without touching the pages).
//
// Reported: reserved_bytes.all.peak / allocated_bytes.all.peak from
// accel_memory_stats_list (torch.cuda.memory_stats's names) after
// accel_empty_cache and accel_reset_peak_memory_stats, so the replay starts
// from an empty device.

constexpr size_t kBf16 = 2, kF32 = 4, kI64 = 8;

struct Gpt2 {
  size_t layers = 12, hidden = 768, heads = 12, vocab = 50257, context = 1024, batch = 2;
};

// One tensor of the forward pass.
struct FwdTensor {
  size_t bytes = 0;
  bool saved = false;        // kept for the backward; else freed after the next allocation
  bool grad = false;         // the backward allocates a gradient of its size
  std::vector<int> weights;  // weight gradients made when the backward reaches it
  void* ptr = nullptr;
};

class Replay {
 public:
  explicit Replay(int32_t device) : device_(device) {}

  void* alloc(size_t bytes) {
    void* p = nullptr;
    if (!ok_) return nullptr;
    if (accel_malloc(device_, bytes, &p) != ACCEL_SUCCESS) {
      fail();
      return nullptr;
    }
    ++calls_;
    return p;
  }
  void release(void*& p) {
    if (p == nullptr) return;
    if (accel_free(p) != ACCEL_SUCCESS) fail();
    ++calls_;
    p = nullptr;
  }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  size_t calls() const { return calls_; }

  // One training run of `lengths.size()` steps; returns false on a failed
  // call (error() says which).
  bool run(const Gpt2& m, const std::vector<size_t>& lengths);

 private:
  void fail() {
    if (ok_) error_ = accel_last_error();
    ok_ = false;
  }
  int32_t device_;
  bool ok_ = true;
  std::string error_;
  size_t calls_ = 0;
};

bool Replay::run(const Gpt2& m, const std::vector<size_t>& lengths) {
  const size_t H = m.hidden;
  // Weights, in elements: the embeddings, per layer ln1 (w, b), qkv (w, b),
  // attention projection (w, b), ln2 (w, b), fc1 (w, b), fc2 (w, b); the
  // final layer norm (w, b).
  std::vector<size_t> weights = {m.vocab * H, m.context * H};
  const int wte = 0, wpe = 1;
  std::vector<int> layer_base;
  for (size_t l = 0; l < m.layers; ++l) {
    layer_base.push_back(static_cast<int>(weights.size()));
    for (size_t n : {H, H, 3 * H * H, 3 * H, H * H, H, H, H, 4 * H * H, 4 * H, 4 * H * H, H})
      weights.push_back(n);
  }
  const int lnf = static_cast<int>(weights.size());
  weights.push_back(H);
  weights.push_back(H);

  std::vector<void*> w(weights.size(), nullptr), g(weights.size(), nullptr),
      adam_m(weights.size(), nullptr), adam_v(weights.size(), nullptr);
  for (size_t i = 0; i < weights.size(); ++i) w[i] = alloc(weights[i] * kBf16);

  for (size_t step = 0; step < lengths.size() && ok_; ++step) {
    const size_t S = lengths[step], T = m.batch * S, A = m.batch * m.heads * S * S;
    void* ids = alloc(T * kI64);
    void* targets = alloc(T * kI64);

    std::vector<FwdTensor> tape;
    auto saved = [&](size_t bytes, bool grad, std::vector<int> ws = {}) {
      tape.push_back({bytes, true, grad, std::move(ws)});
    };
    auto temp = [&](size_t bytes) { tape.push_back({bytes, false, false, {}}); };
    temp(T * H * kBf16);         // token embeddings
    temp(S * H * kBf16);         // position embeddings
    temp(T * H * kBf16);         // their sum
    saved(T * H, false, {wpe});  // dropout mask
    saved(T * H * kBf16, true);  // x0
    for (size_t l = 0; l < m.layers; ++l) {
      const int b = layer_base[l];
      saved(T * kF32, false);                            // ln1 mean
      saved(T * kF32, false);                            // ln1 rstd
      saved(T * H * kBf16, true, {b, b + 1});            // ln1 out
      saved(T * 3 * H * kBf16, true, {b + 2, b + 3});    // qkv
      temp(T * H * kBf16);                               // K transposed, contiguous
      temp(A * kBf16);                                   // scores
      temp(A * kBf16);                                   // scaled scores
      saved(A * kBf16, true);                            // probabilities
      saved(A, false);                                   // attention dropout mask
      saved(A * kBf16, true);                            // dropped probabilities
      temp(T * H * kBf16);                               // context, heads apart
      saved(T * H * kBf16, true, {b + 4, b + 5});        // context, merged
      temp(T * H * kBf16);                               // projection
      saved(T * H, false);                               // dropout mask
      temp(T * H * kBf16);                               // dropped projection
      saved(T * H * kBf16, true);                        // residual
      saved(T * kF32, false);                            // ln2 mean
      saved(T * kF32, false);                            // ln2 rstd
      saved(T * H * kBf16, true, {b + 6, b + 7});        // ln2 out
      saved(T * 4 * H * kBf16, true, {b + 8, b + 9});    // fc1
      saved(T * 4 * H * kBf16, true, {b + 10, b + 11});  // gelu
      temp(T * H * kBf16);                               // fc2
      saved(T * H, false);                               // dropout mask
      temp(T * H * kBf16);                               // dropped fc2
      saved(T * H * kBf16, true);                        // residual: the layer's output
    }
    saved(T * kF32, false);                      // final ln mean
    saved(T * kF32, false);                      // final ln rstd
    saved(T * H * kBf16, true, {lnf, lnf + 1});  // final ln out
    saved(T * m.vocab * kBf16, true, {wte});     // logits (tied embedding)
    temp(T * m.vocab * kF32);                    // logits in fp32
    saved(T * m.vocab * kF32, true);             // log-softmax
    saved(kF32, true);                           // loss

    // Forward: a temporary lives until the next tensor is allocated.
    std::vector<void*> dying;
    for (FwdTensor& t : tape) {
      t.ptr = alloc(t.bytes);
      for (void*& p : dying) release(p);
      dying.clear();
      if (!t.saved) dying.push_back(t.ptr);
    }
    for (void*& p : dying) release(p);

    // Backward.
    void* grad = nullptr;
    for (auto it = tape.rbegin(); it != tape.rend(); ++it) {
      if (!it->saved) continue;
      if (it->grad) {
        void* next = alloc(it->bytes);
        release(grad);
        grad = next;
      }
      for (int i : it->weights) {
        if (g[i] == nullptr) g[i] = alloc(weights[i] * kBf16);
      }
      release(it->ptr);
    }
    release(grad);

    // Adam, then zero_grad(set_to_none=True).
    for (size_t i = 0; i < weights.size(); ++i) {
      if (adam_m[i] == nullptr) {
        adam_m[i] = alloc(weights[i] * kF32);
        adam_v[i] = alloc(weights[i] * kF32);
      }
      void* update = alloc(weights[i] * kF32);
      release(update);
    }
    for (void*& p : g) release(p);
    release(ids);
    release(targets);
  }
  for (auto* v : {&w, &g, &adam_m, &adam_v}) {
    for (void*& p : *v) release(p);
  }
  return ok_;
}

void BM_alloc_fragmentation(benchmark::State& state) {
  if (!need_accel(state)) return;
  const Gpt2 model;
  const std::vector<size_t> lengths = state.range(0) == 0
                                          ? std::vector<size_t>{512, 512, 512, 512, 512, 512}
                                          : std::vector<size_t>{512, 384, 448, 320, 512, 256};
  const int32_t device = accel_current_device_index();
  size_t free_bytes = 0, total_bytes = 0;
  if (accel_mem_get_info(device, &free_bytes, &total_bytes) == ACCEL_SUCCESS &&
      total_bytes < (size_t{4} << 30)) {
    state.SkipWithError("the trace needs a device of 4 GiB (ACCEL_SIM_MEMORY)");
    return;
  }
  int64_t reserved = 0, allocated = 0, requested = 0, segments = 0, vendor = 0;
  size_t calls = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // From an empty device: no cached segment of another benchmark.
    if (accel_empty_cache(device) != ACCEL_SUCCESS ||
        accel_reset_peak_memory_stats(device) != ACCEL_SUCCESS ||
        accel_reset_accumulated_memory_stats(device) != ACCEL_SUCCESS) {
      state.SkipWithError(accel_last_error());
      return;
    }
    if (memory_stat(device, "reserved_bytes.all.current") != 0) {
      state.SkipWithError("device memory still reserved after accel_empty_cache");
      return;
    }
    state.ResumeTiming();
    Replay replay(device);
    if (!replay.run(model, lengths)) {
      state.SkipWithError(("replay failed: " + replay.error()).c_str());
      return;
    }
    reserved = memory_stat(device, "reserved_bytes.all.peak");
    allocated = memory_stat(device, "allocated_bytes.all.peak");
    requested = memory_stat(device, "requested_bytes.all.peak");
    segments = memory_stat(device, "segment.all.peak");
    vendor = memory_stat(device, "num_device_alloc");
    calls = replay.calls();
  }
  if (allocated <= 0 || reserved <= 0) {
    state.SkipWithError("no peak in accel_memory_stats_list");
    return;
  }
  const double mib = 1024.0 * 1024.0;
  state.counters["reserved_over_allocated"] =
      static_cast<double>(reserved) / static_cast<double>(allocated);
  state.counters["reserved_peak_MiB"] = static_cast<double>(reserved) / mib;
  state.counters["allocated_peak_MiB"] = static_cast<double>(allocated) / mib;
  state.counters["requested_peak_MiB"] = static_cast<double>(requested) / mib;
  state.counters["segments_peak"] = static_cast<double>(segments);
  state.counters["device_allocs"] = static_cast<double>(vendor);
  state.counters["calls"] = static_cast<double>(calls);
  state.SetLabel(label());
}
BENCHMARK(BM_alloc_fragmentation)
    ->ArgName("varlen")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  setenv("ACCEL_SIM_DEVICES", "2", 0);
  setenv("ACCEL_BACKEND", "sim", 0);
  setenv("ACCEL_SIM_MEMORY", "17179869184", 0);  // the fragmentation trace peaks near 3 GiB
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
