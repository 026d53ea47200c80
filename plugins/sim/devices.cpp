// devices.cpp - lazy_init, device properties, device_synchronize, device_at,
// and runtime_version (the simulator is its own runtime). No native current
// device: the core keeps the per-thread index.
#include "backend.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

namespace accel::sim {

namespace {

constexpr int32_t kComputeUnits = 4;

// Copies `src` into a fixed char array, always NUL-terminated.
template <size_t N>
void copy_str(char (&dst)[N], const std::string& src) {
  const size_t n = std::min(src.size(), N - 1);
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

// A deterministic RFC 9562 version-8 UUID: fixed bytes for "accel sim",
// the device index in the last four bytes, so it is stable across runs and
// unique per index.
void make_uuid(int32_t index, uint8_t (&uuid)[16]) {
  static constexpr uint8_t kPrefix[12] = {0x61, 0x63, 0x63, 0x65, 0x6c, 0x2d,
                                          0x80, 0x73, 0x80, 0x69, 0x6d, 0x00};
  std::memcpy(uuid, kPrefix, sizeof kPrefix);
  const auto u = static_cast<uint32_t>(index);
  uuid[12] = static_cast<uint8_t>(u >> 24);
  uuid[13] = static_cast<uint8_t>(u >> 16);
  uuid[14] = static_cast<uint8_t>(u >> 8);
  uuid[15] = static_cast<uint8_t>(u);
  uuid[6] = static_cast<uint8_t>((uuid[6] & 0x0f) | 0x80);  // version 8
  uuid[8] = static_cast<uint8_t>((uuid[8] & 0x3f) | 0x80);  // RFC variant
}

}  // namespace

accel_status_t device_at(int32_t device_index, Device*& out) noexcept {
  State* st = nullptr;
  try {
    st = &state();  // built by init already; this only reads it
  } catch (const std::bad_alloc&) {
    return fail(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory reading the configuration");
  } catch (const std::exception& e) {
    return fail(ACCEL_ERROR_INTERNAL, "reading the configuration: %s", e.what());
  }
  if (device_index < 0 || device_index >= st->device_count)
    return fail(ACCEL_ERROR_INVALID_DEVICE, "device %d is out of range [0, %d)",
                static_cast<int>(device_index), static_cast<int>(st->device_count));
  out = st->devices[static_cast<size_t>(device_index)].get();
  return ACCEL_SUCCESS;
}

accel_status_t op_lazy_init() {
  return guarded("lazy_init", [] {
    // A real backend initialises its vendor runtime here (cuInit, zeInit).
    // The simulator has nothing heavy to do: worker threads start with the
    // streams that need them, so unused devices cost nothing.
    State& st = state();
    accel::plugin::log(
        ACCEL_LOG_DEBUG, "simulating %d device(s), %llu bytes each",
        static_cast<int>(st.device_count),
        static_cast<unsigned long long>(st.devices.empty() ? 0 : st.devices[0]->total_memory));
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props) {
  return guarded("get_device_properties", [&] {
    if (props == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "get_device_properties: props is NULL");
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;

    // The caller's struct may be older (shorter) than ours: write only the
    // fields it holds.
    if (ACCEL_PLUGIN_HOLDS(props, name))
      copy_str(props->name, "accel simulated device " + std::to_string(device));
    if (ACCEL_PLUGIN_HOLDS(props, vendor)) copy_str(props->vendor, "accel");
    if (ACCEL_PLUGIN_HOLDS(props, total_memory)) props->total_memory = dev->total_memory;
    if (ACCEL_PLUGIN_HOLDS(props, uuid)) make_uuid(device, props->uuid);
    if (ACCEL_PLUGIN_HOLDS(props, has_uuid)) props->has_uuid = 1;
    if (ACCEL_PLUGIN_HOLDS(props, pci_bus_id)) props->pci_bus_id[0] = '\0';  // no bus: unknown
    if (ACCEL_PLUGIN_HOLDS(props, architecture)) copy_str(props->architecture, "sim-1");
    if (ACCEL_PLUGIN_HOLDS(props, compute_units)) props->compute_units = kComputeUnits;
    if (ACCEL_PLUGIN_HOLDS(props, device_index)) props->device_index = device;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_device_synchronize(int32_t device) {
  return guarded("device_synchronize", [&] {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    // Snapshot under the lock, wait outside it: a long synchronize must not
    // block other threads creating or destroying streams. Destroyed streams
    // still draining count (all work submitted to the device, as
    // cudaDeviceSynchronize); destroy moves a stream from `streams` to
    // `draining` under this lock, so the snapshot holds it either way.
    std::vector<std::shared_ptr<Stream>> live;
    {
      std::lock_guard<std::mutex> lock(dev->streams_mu);
      live.reserve(dev->streams.size() + dev->draining.size());
      for (auto& [key, s] : dev->streams) live.push_back(s);
      live.insert(live.end(), dev->draining.begin(), dev->draining.end());
    }
    for (auto& s : live) {
      if (s->is_current_worker())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                    "device_synchronize: called from a host function running on a stream of sim "
                    "device %d; it would wait for itself",
                    static_cast<int>(device));
    }
    for (auto& s : live) s->synchronize();
    live.clear();  // the last reference to a reaped stream may be ours
    reap_drained(*dev);
    return ACCEL_SUCCESS;
  });
}

// A vendor backend reports its driver or runtime here (without creating a
// context where the vendor allows); the simulator is its own runtime.
accel_status_t op_runtime_version(char* buf, size_t size) {
  return guarded("runtime_version", [&] {
    if (buf == nullptr || size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "runtime_version: buf is NULL or size is 0");
    // snprintf cuts at size - 1 bytes, as the ABI asks.
    std::snprintf(buf, size, "accel sim %d.%d.%d (simulated devices)", ACCEL_VERSION_MAJOR,
                  ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::sim

// ---------------------------------------------------------------------------
// ABI 1.1: device native handle, peer access, attributes
// ---------------------------------------------------------------------------

namespace accel::sim {

accel_status_t op_device_native_handle(int32_t device, accel_native_handle_t* out) {
  return guarded("device_native_handle", [&] {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    if (out == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "device_native_handle: out is NULL");
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_SIM, dev, nullptr, device);
  });
}

// Simulated devices live in one address space: each reaches every other.
accel_status_t op_device_can_access_peer(int32_t device, int32_t peer, int32_t* can_access) {
  return on_device_pair("device_can_access_peer", device, peer, [&](Device*, Device*) {
    *can_access = device != peer ? 1 : 0;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_device_enable_peer_access(int32_t device, int32_t peer) {
  return on_device_pair("device_enable_peer_access", device, peer,
                        [](Device*, Device*) { return ACCEL_SUCCESS; });
}

// Fixed figures of a small CUDA-like device, so that code reading
// attributes has something plausible to work with (the launch limits are
// backend.hpp's, which launch_kernel enforces); what a simulator cannot
// honestly have (clock, bus width, L2, stepping) is not supported, which
// also exercises that answer.
accel_status_t op_device_get_attribute(int32_t device, accel_device_attr_t attr, int64_t* value) {
  return guarded("device_get_attribute", [&] {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    int64_t v = 0;
    switch (static_cast<int>(attr)) {
      case ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR:
        v = 1;
        break;
      case ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR:
        v = 0;
        break;
      case ACCEL_DEVICE_ATTR_WARP_SIZE:
        v = 32;
        break;
      case ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK:
        v = kMaxThreadsPerBlock;
        break;
      case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_X:
        v = kMaxBlockDim[0];
        break;
      case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Y:
        v = kMaxBlockDim[1];
        break;
      case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Z:
        v = kMaxBlockDim[2];
        break;
      case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_X:
        v = kMaxGridDim[0];
        break;
      case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Y:
        v = kMaxGridDim[1];
        break;
      case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Z:
        v = kMaxGridDim[2];
        break;
      case ACCEL_DEVICE_ATTR_SHARED_MEMORY_PER_BLOCK:
        v = static_cast<int64_t>(kSharedMemoryPerBlock);
        break;
      case ACCEL_DEVICE_ATTR_MULTIPROCESSOR_COUNT:
        v = kComputeUnits;
        break;
      case ACCEL_DEVICE_ATTR_MAX_ALLOCATION_SIZE:
        v = static_cast<int64_t>(dev->total_memory);
        break;
      case ACCEL_DEVICE_ATTR_INTEGRATED:
        v = 1;
        break;
      case ACCEL_DEVICE_ATTR_UNIFIED_ADDRESSING:
        v = 1;
        break;
      case ACCEL_DEVICE_ATTR_MANAGED_MEMORY:
        v = 0;
        break;
      case ACCEL_DEVICE_ATTR_CONCURRENT_KERNELS:
        v = 1;
        break;
      case ACCEL_DEVICE_ATTR_ASYNC_ENGINE_COUNT:
        v = 0;
        break;
      case ACCEL_DEVICE_ATTR_ECC_ENABLED:
        v = 0;
        break;
      default:
        return fail(ACCEL_ERROR_NOT_SUPPORTED,
                    "device_get_attribute: sim devices do not model attribute %d (clock, bus "
                    "width, L2 size and stepping have no meaning for a simulator)",
                    static_cast<int>(attr));
    }
    *value = v;
    return ACCEL_SUCCESS;
  });
}

// Host memory holds any element type: every dtype stays supported.
accel_status_t op_get_device_capability(int32_t device, accel_device_capability_t* capability) {
  return guarded("get_device_capability", [&] {
    Device* dev;
    (void)capability;
    return device_at(device, dev);
  });
}

}  // namespace accel::sim
