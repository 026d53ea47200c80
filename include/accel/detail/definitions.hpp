/*
 * accel/detail/definitions.hpp - the longer bodies of accel.hpp's wrappers.
 *
 * Not a public interface: accel.hpp includes it at its end, once every class
 * it declares is complete; the comments on the declarations in accel.hpp say
 * what each function does. Here: Error's what() text and detail::check(),
 * the Stream members that need Event, DeviceBuffer<T>'s members,
 * Module::load_file, and the
 * wrappers that convert a C list or struct (statistics, the snapshot,
 * device properties, the backend list).
 */
#ifndef ACCEL_DETAIL_DEFINITIONS_HPP
#define ACCEL_DETAIL_DEFINITIONS_HPP

#ifndef ACCEL_ACCEL_HPP
#error "include <accel/accel.hpp>, not accel/detail/definitions.hpp"
#endif

namespace accel {

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */
/* ------------------------------------------------------------------------ */

inline std::string Error::compose(accel_status_t status, const std::string& message,
                                  std::string_view operation) {
  std::string_view detail = message;
  std::string s;
  if (!operation.empty()) {
    s.append(operation);
    s += ": ";
    // The C detail already starts with the function's name: what() puts
    // the operation first for every error, so drop the second copy.
    if (detail.size() > operation.size() && detail.compare(0, operation.size(), operation) == 0 &&
        detail[operation.size()] == ':') {
      detail.remove_prefix(operation.size() + 1);
      while (!detail.empty() && detail.front() == ' ') detail.remove_prefix(1);
    }
  }
  s += accel_status_name(status);
  s += ": ";
  s.append(detail);
  return s;
}

inline void detail::check(accel_status_t st, const char* operation) {
  if (st == ACCEL_SUCCESS) return;
  const char* detail = accel_last_error();
  throw Error(st, (detail != nullptr && *detail != '\0') ? detail : accel_status_message(st),
              operation);
}

/* ------------------------------------------------------------------------ */
/* Streams                                                                    */
/* ------------------------------------------------------------------------ */

inline void Stream::wait(const Event& event) const {
  detail::check(accel_stream_wait_event(handle_, event.handle()), "accel_stream_wait_event");
}

inline void Stream::wait(const Stream& other) const {
  if (other.handle_ == handle_ && handle_ != nullptr) return;  // in order already
  Event marker(EventOptions{false, other.device()});
  marker.record(other);
  wait(marker);
}

inline void Stream::record(Event& event) const {
  detail::check(accel_event_record(event.handle(), handle_), "accel_event_record");
}

inline Event Stream::record_event(bool enable_timing) const {
  Event e(EventOptions{enable_timing, device()});
  record(e);
  return e;
}

template <class F>
void Stream::launch_host_func(F&& fn) const {
  using Fn = std::decay_t<F>;
  static_assert(std::is_invocable_v<Fn&>, "launch_host_func needs a callable taking no arguments");
  auto holder = std::make_unique<Fn>(std::forward<F>(fn));
  detail::check(accel_launch_host_func(handle_, &detail::host_trampoline<Fn>, holder.get()),
                "accel_launch_host_func");
  // Queued: the trampoline owns it now (it may already have run).
  (void)holder.release();
}

/* ------------------------------------------------------------------------ */
/* DeviceBuffer<T>                                                            */
/* ------------------------------------------------------------------------ */

template <class T>
DeviceBuffer<T>::DeviceBuffer(std::size_t count, std::optional<int> device) {
  check_count(count);
  if (device.has_value() && *device >= 0) {
    device_ = *device;
  } else {
    device_ = current_device_index();
  }
  if (count == 0) return;
  accel_stream_t stream = nullptr;
  detail::check(accel_current_stream(static_cast<int32_t>(device_), &stream),
                "accel_current_stream");
  allocate(count, stream);
}

template <class T>
DeviceBuffer<T>::DeviceBuffer(std::size_t count, const Stream& stream) {
  check_count(count);
  device_ = stream.device();
  stream_ = stream.handle();
  if (count == 0) return;
  allocate(count, stream.handle());
}

template <class T>
DeviceBuffer<T>::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      device_(other.device_),
      stream_(other.stream_) {}

template <class T>
DeviceBuffer<T>& DeviceBuffer<T>::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    size_ = std::exchange(other.size_, 0);
    device_ = other.device_;
    stream_ = other.stream_;
  }
  return *this;
}

template <class T>
void DeviceBuffer<T>::record_stream(const Stream& stream) const {
  if (ptr_ == nullptr || stream.handle() == stream_) return;
  if (stream.device() == device_ && !detail::native_allocator()) {
    detail::check(accel_record_stream(ptr_, stream.handle()), "accel_record_stream");
    return;
  }
  // accel_record_stream is a no-op under backend:native (accel_free_async
  // waits only for the buffer's stream) and refuses another device's
  // stream: order the buffer's stream after `stream` instead.
  Stream::borrow(stream_).wait(stream);
}

template <class T>
void DeviceBuffer<T>::copy_from(HostSpan<const T> src, const Stream& stream, std::size_t offset) {
  check_range(offset, src.size(), "DeviceBuffer::copy_from");
  if (src.empty()) return;
  detail::check(accel_memcpy_async(ptr_ + offset, src.data(), src.size_bytes(),
                                   ACCEL_MEMCPY_HOST_TO_DEVICE, stream.handle()),
                "accel_memcpy_async");
  record_stream(stream);
}

template <class T>
void DeviceBuffer<T>::copy_to(HostSpan<T> dst, const Stream& stream, std::size_t offset) const {
  check_range(offset, dst.size(), "DeviceBuffer::copy_to");
  if (dst.empty()) return;
  detail::check(accel_memcpy_async(dst.data(), ptr_ + offset, dst.size_bytes(),
                                   ACCEL_MEMCPY_DEVICE_TO_HOST, stream.handle()),
                "accel_memcpy_async");
  record_stream(stream);
}

template <class T>
void DeviceBuffer<T>::copy_from(const DeviceBuffer& src, const Stream& stream) {
  if (src.size_ != size_)
    throw Error(ACCEL_ERROR_INVALID_ARGUMENT,
                "source has " + std::to_string(src.size_) + " elements, destination " +
                    std::to_string(size_),
                "DeviceBuffer::copy_from");
  copy_from(src, 0, 0, size_, stream);
}

template <class T>
void DeviceBuffer<T>::copy_from(const DeviceBuffer& src, std::size_t src_offset, std::size_t offset,
                                std::size_t count, const Stream& stream) {
  src.check_range(src_offset, count, "DeviceBuffer::copy_from (source)");
  check_range(offset, count, "DeviceBuffer::copy_from");
  if (count == 0) return;
  if (src.device_ == device_) {
    detail::check(accel_memcpy_async(ptr_ + offset, src.ptr_ + src_offset, count * sizeof(T),
                                     ACCEL_MEMCPY_DEVICE_TO_DEVICE, stream.handle()),
                  "accel_memcpy_async");
  } else {
    detail::check(accel_memcpy_peer_async(ptr_ + offset, static_cast<int32_t>(device_),
                                          src.ptr_ + src_offset, static_cast<int32_t>(src.device_),
                                          count * sizeof(T), stream.handle()),
                  "accel_memcpy_peer_async");
  }
  record_stream(stream);
  src.record_stream(stream);
}

template <class T>
void DeviceBuffer<T>::fill_bytes(int value, const Stream& stream) {
  if (size_ == 0) return;
  detail::check(accel_memset_async(ptr_, value, size_bytes(), stream.handle()),
                "accel_memset_async");
  record_stream(stream);
}

template <class T>
void DeviceBuffer<T>::check_count(std::size_t count) {
  if (count > SIZE_MAX / sizeof(T))
    throw Error(ACCEL_ERROR_OUT_OF_MEMORY,
                std::to_string(count) + " elements of " + std::to_string(sizeof(T)) +
                    " bytes overflow size_t",
                "DeviceBuffer");
}

template <class T>
void DeviceBuffer<T>::allocate(std::size_t count, accel_stream_t stream) {
  void* p = nullptr;
  detail::check(accel_malloc_async(count * sizeof(T), stream, &p), "accel_malloc_async");
  ptr_ = static_cast<T*>(p);
  size_ = count;
  stream_ = stream;
}

template <class T>
void DeviceBuffer<T>::check_range(std::size_t offset, std::size_t count, const char* op) const {
  if (offset > size_ || count > size_ - offset)
    throw Error(ACCEL_ERROR_INVALID_ARGUMENT,
                "elements [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                    std::to_string(count) + ") do not fit a buffer of " + std::to_string(size_) +
                    " elements",
                op);
}

template <class T>
void DeviceBuffer<T>::reset() noexcept {
  size_ = 0;
  if (ptr_ == nullptr) return;
  void* p = std::exchange(ptr_, nullptr);
  accel_status_t st = accel_free_async(p, stream_);
  if (st == ACCEL_ERROR_INVALID_ARGUMENT || st == ACCEL_ERROR_DEVICE_MISMATCH) {
    // The stream was destroyed before the buffer (its handle is refused,
    // or names a newer stream). accel_free orders the free after the
    // destroyed stream's work with the caching allocator; backend:native
    // frees at once, so wait for the device first. A pointer that is not
    // live fails here again and is reported.
    if (detail::native_allocator())
      detail::report_status("~DeviceBuffer: accel_synchronize",
                            accel_synchronize(static_cast<int32_t>(device_)));
    detail::report_status("~DeviceBuffer: accel_free", accel_free(p));
    return;
  }
  detail::report_status("~DeviceBuffer: accel_free_async", st);
}

/* ------------------------------------------------------------------------ */
/* Modules                                                                    */
/* ------------------------------------------------------------------------ */

inline Module Module::load_file_c(const std::string* paths, std::size_t count,
                                  std::optional<int> device, const std::string& options) {
  std::vector<const char*> c_paths;
  c_paths.reserve(count);
  for (std::size_t i = 0; i < count; ++i) c_paths.push_back(paths[i].c_str());
  accel_module_t m = nullptr;
  detail::check(accel_module_load_file(detail::c_device(device), c_paths.data(), c_paths.size(),
                                       options.empty() ? nullptr : options.c_str(), &m),
                "accel_module_load_file");
  return Module(m);
}

inline Module Module::load_file(std::initializer_list<std::string> paths, std::optional<int> device,
                                const std::string& options) {
  return load_file_c(paths.begin(), paths.size(), device, options);
}

inline Module Module::load_file(const std::vector<std::string>& paths, std::optional<int> device,
                                const std::string& options) {
  return load_file_c(paths.data(), paths.size(), device, options);
}

/* ------------------------------------------------------------------------ */
/* The caching allocator                                                      */
/* ------------------------------------------------------------------------ */

inline memory::StatsMap memory::stats(std::optional<int> device) {
  const int32_t d = detail::c_device(device);
  std::size_t count = 0;
  detail::check(accel_memory_stats_list(d, nullptr, 0, &count), "accel_memory_stats_list");
  std::vector<accel_memory_stat_t> list(count);
  std::size_t written = 0;
  detail::check(accel_memory_stats_list(d, list.data(), list.size(), &written),
                "accel_memory_stats_list");
  return StatsMap(detail::stats_by_name(list, written));
}

inline std::string memory::snapshot(std::optional<int> device) {
  const int32_t d = detail::c_device(device);
  std::size_t length = 0;
  accel_status_t st = accel_memory_snapshot(d, nullptr, 0, &length);
  if (st != ACCEL_ERROR_OUT_OF_RANGE) detail::check(st, "accel_memory_snapshot");
  // Room for what was asked and some growth (another thread allocating),
  // doubled on every round that was still too small: the snapshot is
  // bounded (the history is a ring), so this ends while it grows.
  std::size_t capacity = length + 1 + length / 8 + 4096;
  for (int attempt = 0; attempt < 24; ++attempt) {
    std::string text(capacity, '\0');
    st = accel_memory_snapshot(d, text.data(), text.size(), &length);
    if (st == ACCEL_SUCCESS) {
      text.resize(length);
      return text;
    }
    if (st != ACCEL_ERROR_OUT_OF_RANGE) detail::check(st, "accel_memory_snapshot");
    capacity = std::max(capacity * 2, length + 1 + length / 8 + 4096);
  }
  throw Error(ACCEL_ERROR_OUT_OF_RANGE, "the snapshot kept growing faster than it was read",
              "accel_memory_snapshot");
}

inline memory::StatsMap memory::host_stats() {
  std::size_t count = 0;
  detail::check(accel_host_memory_stats_list(nullptr, 0, &count), "accel_host_memory_stats_list");
  std::vector<accel_memory_stat_t> list(count);
  std::size_t written = 0;
  detail::check(accel_host_memory_stats_list(list.data(), list.size(), &written),
                "accel_host_memory_stats_list");
  return StatsMap(detail::stats_by_name(list, written));
}

/* ------------------------------------------------------------------------ */
/* Device properties, backend introspection                                   */
/* ------------------------------------------------------------------------ */

inline DeviceProperties device_properties(std::optional<int> device) {
  accel_device_properties_t p{};
  p.struct_size = sizeof p;
  detail::check(accel_get_device_properties(detail::c_device(device), &p),
                "accel_get_device_properties");
  DeviceProperties out;
  // The C strings are NUL-terminated inside their arrays; bound them anyway.
  auto str = [](const char* s, std::size_t cap) {
    std::size_t n = 0;
    while (n < cap && s[n] != '\0') ++n;
    return std::string(s, n);
  };
  out.name = str(p.name, sizeof p.name);
  out.vendor = str(p.vendor, sizeof p.vendor);
  out.total_memory = p.total_memory;
  if (p.has_uuid != 0) {
    std::array<std::uint8_t, 16> u{};
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = p.uuid[i];
    out.uuid = u;
  }
  out.pci_bus_id = str(p.pci_bus_id, sizeof p.pci_bus_id);
  out.architecture = str(p.architecture, sizeof p.architecture);
  out.compute_units = static_cast<int>(p.compute_units);
  out.device_index = static_cast<int>(p.device_index);
  return out;
}

inline std::vector<BackendInfo> backends() {
  std::vector<BackendInfo> out;
  const std::size_t n = accel_backend_count();
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    accel_backend_info_t b{};
    b.struct_size = sizeof b;
    detail::check(accel_get_backend_info(i, &b), "accel_get_backend_info");
    BackendInfo info;
    info.name = b.name != nullptr ? b.name : "";
    info.path = b.path != nullptr ? b.path : "";
    info.status = b.status;
    info.reason = b.reason != nullptr ? b.reason : "";
    info.abi_major = b.abi_major;
    info.abi_minor = b.abi_minor;
    info.priority = static_cast<int>(b.priority);
    info.device_count = static_cast<int>(b.device_count);
    info.capabilities = b.capabilities;
    info.is_current = b.is_current != 0;
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace accel

#endif /* ACCEL_DETAIL_DEFINITIONS_HPP */
