// accel._accel: the binding of the public C API (include/accel/accel.h) that
// the pure-Python modules of the `accel` package build torch.accelerator's
// names on. Streams and events cross as integers (their handle values);
// DeviceBuffer and HostBuffer own memory and are classes here because they
// need the buffer protocol and destructors that run without Python code.
//
// Every status other than ACCEL_SUCCESS raises accel.Error (a RuntimeError;
// accel.InvalidArgumentError, also a ValueError, for INVALID_DEVICE and
// INVALID_ARGUMENT) carrying the status name and accel_last_error()'s text.
// Every call that can block runs with the GIL released.
#include <accel/accel.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <vector>

namespace py = pybind11;

namespace {

// Raw references, never released: the classes must outlive every module
// object that may raise them, interpreter shutdown included.
PyObject* g_error = nullptr;
PyObject* g_value_error = nullptr;

struct StatusError {
  accel_status_t status;
  std::string detail;
};

void check(accel_status_t st) {
  if (st != ACCEL_SUCCESS) throw StatusError{st, accel_last_error()};
}

// "ACCEL_ERROR_INVALID_DEVICE" -> "INVALID_DEVICE".
std::string short_name(accel_status_t st) {
  std::string name = accel_status_name(st);
  for (const char* prefix : {"ACCEL_ERROR_", "ACCEL_"}) {
    std::string p = prefix;
    if (name.rfind(p, 0) == 0) return name.substr(p.size());
  }
  return name;
}

void raise_status(const StatusError& e) {
  std::string name = short_name(e.status);
  std::string text = name + ": " + (e.detail.empty() ? accel_status_message(e.status) : e.detail);
  bool value = e.status == ACCEL_ERROR_INVALID_DEVICE || e.status == ACCEL_ERROR_INVALID_ARGUMENT;
  PyObject* cls = value ? g_value_error : g_error;
  PyObject* exc = PyObject_CallFunction(cls, "s", text.c_str());
  if (exc == nullptr) return;  // the call set its own exception
  PyObject* status = PyUnicode_FromString(name.c_str());
  PyObject* code = PyLong_FromLong(static_cast<long>(e.status));
  PyObject* detail = PyUnicode_FromString(e.detail.c_str());
  if (status != nullptr) PyObject_SetAttrString(exc, "status", status);
  if (code != nullptr) PyObject_SetAttrString(exc, "code", code);
  if (detail != nullptr) PyObject_SetAttrString(exc, "detail", detail);
  Py_XDECREF(status);
  Py_XDECREF(code);
  Py_XDECREF(detail);
  PyErr_SetObject(cls, exc);
  Py_DECREF(exc);
}

template <class T>
T* as_handle(std::uintptr_t h) {
  return reinterpret_cast<T*>(h);
}
accel_stream_t stream_of(std::uintptr_t h) { return as_handle<accel_stream_s>(h); }
accel_event_t event_of(std::uintptr_t h) { return as_handle<accel_event_s>(h); }
std::uintptr_t id_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// A status from a call made with the GIL released.
template <class F>
accel_status_t nogil(F&& f) {
  py::gil_scoped_release release;
  return f();
}

bool ready(accel_status_t st) {
  if (st == ACCEL_ERROR_NOT_READY) return false;
  check(st);
  return true;
}

py::dict native_dict(const accel_native_handle_t& h) {
  py::dict d;
  d["type"] = static_cast<int>(h.type);
  d["backend"] = h.backend != nullptr ? py::str(h.backend) : py::str("");
  d["handle"] = id_of(h.handle);
  d["context"] = id_of(h.context);
  d["ordinal"] = h.ordinal;
  return d;
}

// --- host functions ---------------------------------------------------------

std::atomic<long> g_host_calls_pending{0};

void run_host_call(void* user_data) {
  auto* fn = static_cast<PyObject*>(user_data);
  // A call still queued when the interpreter is finalising cannot take the
  // GIL any more: it is dropped (the atexit drain makes this rare).
  if (Py_IsInitialized() && !_Py_IsFinalizing()) {
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject* result = PyObject_CallNoArgs(fn);
    if (result == nullptr) {
      PyErr_WriteUnraisable(fn);
    } else {
      Py_DECREF(result);
    }
    Py_DECREF(fn);
    PyGILState_Release(gil);
  }
  g_host_calls_pending.fetch_sub(1);
}

// Host functions recorded by a capture run once per replay, each run
// dropping one reference: the capture keeps the reference launch_host_func
// took (by capturing stream, then by graph once the capture ends) and every
// replay adds one per function (graph_replay). Touched with the GIL held.
std::unordered_map<std::uintptr_t, std::vector<PyObject*>> g_capture_fns;
std::unordered_map<std::uintptr_t, std::vector<PyObject*>> g_graph_fns;

bool capturing(std::uintptr_t stream) {
  accel_capture_status_t st = ACCEL_CAPTURE_STATUS_NONE;
  return accel_stream_capture_status(stream_of(stream), &st) == ACCEL_SUCCESS &&
         st == ACCEL_CAPTURE_STATUS_ACTIVE;
}

void launch_host_func(std::uintptr_t stream, py::object fn) {
  if (!PyCallable_Check(fn.ptr())) throw py::type_error("launch_host_func: fn must be callable");
  PyObject* raw = fn.release().ptr();
  if (capturing(stream)) {  // recorded, not queued: nothing runs until a replay
    accel_status_t st = accel_launch_host_func(stream_of(stream), run_host_call, raw);
    if (st != ACCEL_SUCCESS) {
      Py_DECREF(raw);
      check(st);
    }
    g_capture_fns[stream].push_back(raw);
    return;
  }
  g_host_calls_pending.fetch_add(1);
  // Without the GIL: a backend may run the function before the call
  // returns, or wait for room in its queue while an earlier one needs the GIL.
  accel_status_t st =
      nogil([&] { return accel_launch_host_func(stream_of(stream), run_host_call, raw); });
  if (st != ACCEL_SUCCESS) {
    g_host_calls_pending.fetch_sub(1);
    Py_DECREF(raw);
    check(st);
  }
}

// Waits (GIL released, so the calls can run) until no host function is
// queued, for at most `seconds`; returns how many still are.
long drain_host_calls(double seconds) {
  py::gil_scoped_release release;
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (g_host_calls_pending.load() > 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return g_host_calls_pending.load();
}

// --- buffers ----------------------------------------------------------------

// A C-contiguous view of a buffer-protocol object, released on scope exit.
class View {
 public:
  View(py::handle obj, bool writable) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj.ptr(), &view_, flags) != 0) throw py::error_already_set();
  }
  View(const View&) = delete;
  View& operator=(const View&) = delete;
  ~View() { PyBuffer_Release(&view_); }
  void* data() const { return view_.buf; }
  size_t size() const { return static_cast<size_t>(view_.len); }

 private:
  Py_buffer view_{};
};

class DeviceBuffer {
 public:
  DeviceBuffer(size_t nbytes, std::uintptr_t stream) : nbytes_(nbytes) {
    accel_stream_t s = stream_of(stream);
    if (s == nullptr) check(accel_current_stream(-1, &s));
    check(accel_stream_device(s, &device_));
    void* p = nullptr;
    check(nogil([&] { return accel_malloc_async(nbytes, s, &p); }));
    ptr_ = p;
    stream_ = s;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  // Freed in the order of the stream it was allocated on, so work queued
  // there (and on streams named by record_stream) finishes first.
  ~DeviceBuffer() {
    if (ptr_ != nullptr) (void)accel_free_async(ptr_, stream_);
  }

  std::uintptr_t ptr() const { return id_of(ptr_); }
  size_t nbytes() const { return nbytes_; }
  int32_t device() const { return device_; }
  std::uintptr_t stream() const { return id_of(stream_); }

  void copy_from(py::handle src, bool non_blocking, std::uintptr_t stream) {
    accel_stream_t s = use_stream(stream);
    if (py::isinstance<DeviceBuffer>(src)) {
      auto& other = src.cast<DeviceBuffer&>();
      same_size(other.nbytes_, "copy_from");
      device_copy(ptr_, device_, other.ptr_, other.device_, s);
      other.used_by(s);
    } else {
      View view(src, false);
      same_size(view.size(), "copy_from");
      check(nogil([&] {
        return accel_memcpy_async(ptr_, view.data(), nbytes_, ACCEL_MEMCPY_HOST_TO_DEVICE, s);
      }));
    }
    finish(s, non_blocking);
  }

  void copy_to(py::handle dst, bool non_blocking, std::uintptr_t stream) {
    accel_stream_t s = use_stream(stream);
    if (py::isinstance<DeviceBuffer>(dst)) {
      auto& other = dst.cast<DeviceBuffer&>();
      same_size(other.nbytes_, "copy_to");
      device_copy(other.ptr_, other.device_, ptr_, device_, s);
      other.used_by(s);
    } else {
      View view(dst, true);
      same_size(view.size(), "copy_to");
      check(nogil([&] {
        return accel_memcpy_async(view.data(), ptr_, nbytes_, ACCEL_MEMCPY_DEVICE_TO_HOST, s);
      }));
    }
    finish(s, non_blocking);
  }

  void fill(int value, std::uintptr_t stream) {
    if (value < 0 || value > 255) throw py::value_error("fill_: value must be a byte (0 to 255)");
    accel_stream_t s = use_stream(stream);
    check(nogil([&] { return accel_memset_async(ptr_, value, nbytes_, s); }));
  }

  void record_stream(std::uintptr_t stream) { check(accel_record_stream(ptr_, stream_of(stream))); }

 private:
  // The stream a copy runs on (0: the current stream of the buffer's
  // device), named for the allocator so the memory outlives the copy.
  accel_stream_t use_stream(std::uintptr_t stream) {
    accel_stream_t s = stream_of(stream);
    if (s == nullptr) check(accel_current_stream(device_, &s));
    check(accel_record_stream(ptr_, s));
    return s;
  }
  // Keeps this buffer's memory from reuse until the work queued on `s` so
  // far has completed: record_stream on its own device; from another
  // device its allocating stream waits for an event of `s`, so the free
  // (in that stream's order) comes after.
  void used_by(accel_stream_t s) {
    int32_t dev = -1;
    check(accel_stream_device(s, &dev));
    if (dev == device_) {
      check(accel_record_stream(ptr_, s));
      return;
    }
    accel_event_t ev = nullptr;
    check(accel_event_create(dev, ACCEL_EVENT_DEFAULT, &ev));
    accel_status_t st = accel_event_record(ev, s);
    if (st == ACCEL_SUCCESS) st = accel_stream_wait_event(stream_, ev);
    (void)accel_event_destroy(ev);
    check(st);
  }
  void same_size(size_t other, const char* what) const {
    if (other != nbytes_) {
      throw py::value_error(std::string(what) + ": the other buffer has " + std::to_string(other) +
                            " bytes, this one " + std::to_string(nbytes_));
    }
  }
  void device_copy(void* dst, int32_t dst_dev, const void* src, int32_t src_dev,
                   accel_stream_t s) const {
    check(nogil([&] {
      if (dst_dev == src_dev)
        return accel_memcpy_async(dst, src, nbytes_, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s);
      return accel_memcpy_peer_async(dst, dst_dev, src, src_dev, nbytes_, s);
    }));
  }
  static void finish(accel_stream_t s, bool non_blocking) {
    if (!non_blocking) check(nogil([&] { return accel_stream_synchronize(s); }));
  }

  void* ptr_ = nullptr;
  size_t nbytes_ = 0;
  int32_t device_ = 0;
  accel_stream_t stream_ = nullptr;
};

class HostBuffer {
 public:
  explicit HostBuffer(size_t nbytes) : nbytes_(nbytes) {
    void* p = nullptr;
    check(nogil([&] { return accel_host_malloc(nbytes, 0, &p); }));
    ptr_ = p;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  // The pinned cache reuses the block only after the copies queued from or
  // to it have completed, so collecting it with a copy queued is safe.
  ~HostBuffer() {
    if (ptr_ != nullptr) (void)accel_host_free(ptr_);
  }
  std::uintptr_t ptr() const { return id_of(ptr_); }
  size_t nbytes() const { return nbytes_; }
  py::buffer_info info() {
    return py::buffer_info(ptr_, 1, py::format_descriptor<uint8_t>::format(), 1,
                           {static_cast<py::ssize_t>(nbytes_)}, {1}, false);
  }

 private:
  void* ptr_ = nullptr;
  size_t nbytes_ = 0;
};

// --- DLPack -------------------------------------------------------------------

// DLPack's C ABI (dlpack.h 0.8, dmlc.github.io/dlpack): what a PyCapsule
// named "dltensor" points at. Declared here from the specification: Debian
// ships no dlpack.h.
struct DLDevice {
  int32_t device_type;  // DLDeviceType
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // DLDataTypeCode
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // NULL: compact, row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
constexpr uint8_t kDLUInt = 1;

// The tensor and what keeps its memory alive: a reference to the buffer
// object, dropped by the deleter (the consumer's, or the capsule's when
// nothing consumed it).
struct DLPackOwner {
  DLManagedTensor tensor{};
  int64_t shape[1] = {0};
  PyObject* owner = nullptr;
};

void dlpack_delete(DLManagedTensor* t) {
  auto* m = static_cast<DLPackOwner*>(t->manager_ctx);
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_XDECREF(m->owner);
  PyGILState_Release(gil);
  delete m;
}

void dlpack_capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "used_dltensor")) return;  // a consumer owns it
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (t != nullptr && t->deleter != nullptr) t->deleter(t);
  PyErr_Clear();
  PyErr_Restore(type, value, traceback);
}

// A 1-D uint8 DLPack capsule over `nbytes` at `data` on (device_type, id).
py::object dlpack_capsule(py::object owner, std::uintptr_t data, size_t nbytes, int32_t device_type,
                          int32_t device_id) {
  auto* m = new DLPackOwner;
  m->shape[0] = static_cast<int64_t>(nbytes);
  DLTensor& t = m->tensor.dl_tensor;
  t.data = reinterpret_cast<void*>(data);
  t.device = {device_type, device_id};
  t.ndim = 1;
  t.dtype = {kDLUInt, 8, 1};
  t.shape = m->shape;
  m->tensor.manager_ctx = m;
  m->tensor.deleter = dlpack_delete;
  m->owner = owner.release().ptr();
  PyObject* capsule = PyCapsule_New(&m->tensor, "dltensor", dlpack_capsule_destructor);
  if (capsule == nullptr) {
    Py_DECREF(m->owner);
    delete m;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

// Makes the vendor queue `native` (a consumer's stream, as DLPack passes
// it) wait for the work queued so far on the current stream of `device`:
// an event of that stream, waited for through a borrowed accel stream
// wrapping the queue (accel_stream_from_native), released at once.
void order_native(int32_t device, std::uintptr_t native) {
  accel_stream_t cur = nullptr;
  check(accel_current_stream(device, &cur));
  accel_native_handle_t mine{};
  mine.struct_size = sizeof mine;
  check(accel_stream_native_handle(cur, &mine));
  accel_native_handle_t theirs{};
  theirs.struct_size = sizeof theirs;
  theirs.type = mine.type;
  theirs.handle = reinterpret_cast<void*>(native);
  accel_stream_t wrapped = nullptr;
  check(accel_stream_from_native(device, &theirs, 0, &wrapped));
  accel_event_t ev = nullptr;
  accel_status_t st = accel_event_create(device, ACCEL_EVENT_DEFAULT, &ev);
  if (st == ACCEL_SUCCESS) st = accel_event_record(ev, cur);
  if (st == ACCEL_SUCCESS) st = accel_stream_wait_event(wrapped, ev);
  if (ev != nullptr) (void)accel_event_destroy(ev);
  (void)accel_stream_destroy(wrapped);
  check(st);
}

// --- module -------------------------------------------------------------------

void def_errors(py::module_& m) {
  g_error = PyErr_NewExceptionWithDoc(
      "accel.Error",
      "A call of the accel C API failed: .status is the status name (\"INVALID_DEVICE\"),\n"
      ".code its number, .detail accel_last_error()'s text.",
      PyExc_RuntimeError, nullptr);
  PyObject* bases = PyTuple_Pack(2, g_error, PyExc_ValueError);
  g_value_error = PyErr_NewExceptionWithDoc(
      "accel.InvalidArgumentError",
      "accel.Error for INVALID_DEVICE and INVALID_ARGUMENT; also a ValueError.", bases, nullptr);
  Py_XDECREF(bases);
  if (g_error == nullptr || g_value_error == nullptr) throw py::error_already_set();
  m.attr("Error") = py::handle(g_error);
  m.attr("InvalidArgumentError") = py::handle(g_value_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      raise_status(e);
    }
  });
  m.def("last_error", [] { return std::string(accel_last_error()); });
  m.def("status_name", [](int st) { return short_name(static_cast<accel_status_t>(st)); });
}

void def_devices(py::module_& m) {
  m.def("version", [] { return std::string(accel_version()); });
  m.def("is_available", [] { return accel_is_available() != 0; });
  m.def("current_accelerator", []() -> std::optional<std::string> {
    const char* name = accel_current_accelerator();
    if (name == nullptr) return std::nullopt;
    return std::string(name);
  });
  m.def("selection_reason", [] { return std::string(accel_selection_reason()); });
  m.def("device_count", [] { return accel_device_count(); });
  {
    // A signature line inspect.signature reads (CPython's __text_signature__
    // format), in place of pybind11's own: accel.current_device_index is
    // this function itself.
    py::options options;
    options.disable_function_signatures();
    m.def("current_device_index", [] { return accel_current_device_index(); },
          "current_device_index()\n--\n\n"
          "The calling thread's current device index (-1 without an accelerator).\n"
          "torch.accelerator.current_device_index.");
  }
  m.def("set_device_index", [](int32_t d) { check(accel_set_device_index(d)); });
  m.def("synchronize", [](int32_t d) { check(nogil([&] { return accel_synchronize(d); })); });
  m.def("supported_dtypes", [](int32_t d) {
    accel_device_capability_t cap{};
    cap.struct_size = sizeof cap;
    check(accel_get_device_capability(d, &cap));
    return cap.supported_dtypes;
  });
  m.def("device_properties", [](int32_t d) {
    accel_device_properties_t p{};
    p.struct_size = sizeof p;
    check(accel_get_device_properties(d, &p));
    py::dict out;
    out["name"] = std::string(p.name);
    out["vendor"] = std::string(p.vendor);
    out["total_memory"] = p.total_memory;
    out["architecture"] = std::string(p.architecture);
    out["compute_units"] = p.compute_units;
    out["pci_bus_id"] = std::string(p.pci_bus_id);
    out["device_index"] = p.device_index;
    return out;
  });
  m.def("device_native_handle", [](int32_t d) {
    accel_native_handle_t h{};
    h.struct_size = sizeof h;
    check(accel_device_native_handle(d, &h));
    return native_dict(h);
  });
}

// accel_get_backend_info of every candidate the loader saw.
py::list backends() {
  py::list out;
  for (size_t i = 0, n = accel_backend_count(); i < n; ++i) {
    accel_backend_info_t info{};
    info.struct_size = sizeof info;
    check(accel_get_backend_info(i, &info));
    py::dict d;
    d["name"] = std::string(info.name);
    d["path"] = std::string(info.path);
    d["status"] = std::string(accel_backend_status_name(info.status));
    d["reason"] = std::string(info.reason);
    d["device_count"] = info.device_count;
    d["capabilities"] = info.capabilities;
    d["is_current"] = info.is_current != 0;
    d["runtime_version"] = std::string(info.runtime_version);
    out.append(d);
  }
  return out;
}

void def_streams(py::module_& m) {
  m.def("current_stream", [](int32_t d) {
    accel_stream_t s = nullptr;
    check(accel_current_stream(d, &s));
    return id_of(s);
  });
  m.def("set_stream", [](std::uintptr_t s) { check(accel_set_stream(stream_of(s))); });
  m.def("stream_create", [](int32_t d, int32_t priority) {
    accel_stream_t s = nullptr;
    check(accel_stream_create(d, priority, &s));
    return id_of(s);
  });
  m.def("stream_destroy", [](std::uintptr_t s) { check(accel_stream_destroy(stream_of(s))); });
  // Without the GIL: Level Zero and OpenCL may wait briefly (accel_stream_query).
  m.def("stream_query", [](std::uintptr_t s) {
    return ready(nogil([&] { return accel_stream_query(stream_of(s)); }));
  });
  m.def("stream_synchronize", [](std::uintptr_t s) {
    check(nogil([&] { return accel_stream_synchronize(stream_of(s)); }));
  });
  m.def("stream_device", [](std::uintptr_t s) {
    int32_t d = -1;
    check(accel_stream_device(stream_of(s), &d));
    return d;
  });
  m.def("stream_priority", [](std::uintptr_t s) {
    int32_t p = 0;
    check(accel_stream_priority(stream_of(s), &p));
    return p;
  });
  m.def("stream_priority_range", [](int32_t d) {
    int32_t least = 0, greatest = 0;
    check(accel_stream_priority_range(d, &least, &greatest));
    return std::make_pair(least, greatest);
  });
  m.def("stream_native_handle", [](std::uintptr_t s) {
    accel_native_handle_t h{};
    h.struct_size = sizeof h;
    check(accel_stream_native_handle(stream_of(s), &h));
    return native_dict(h);
  });
  m.def("stream_wait_event", [](std::uintptr_t s, std::uintptr_t e) {
    check(accel_stream_wait_event(stream_of(s), event_of(e)));
  });
  m.def("backends", &backends);
  m.def("launch_host_func", &launch_host_func);
  m.def("drain_host_calls", &drain_host_calls);
}

void def_events(py::module_& m) {
  m.def("event_create", [](int32_t d, bool timing) {
    accel_event_t e = nullptr;
    check(accel_event_create(d, timing ? ACCEL_EVENT_ENABLE_TIMING : ACCEL_EVENT_DEFAULT, &e));
    return id_of(e);
  });
  m.def("event_destroy", [](std::uintptr_t e) { check(accel_event_destroy(event_of(e))); });
  m.def("event_record", [](std::uintptr_t e, std::uintptr_t s) {
    check(accel_event_record(event_of(e), stream_of(s)));
  });
  m.def("event_query", [](std::uintptr_t e) { return ready(accel_event_query(event_of(e))); });
  m.def("event_synchronize", [](std::uintptr_t e) {
    check(nogil([&] { return accel_event_synchronize(event_of(e)); }));
  });
  m.def("event_elapsed_time", [](std::uintptr_t a, std::uintptr_t b) {
    float ms = 0;
    check(accel_event_elapsed_time(event_of(a), event_of(b), &ms));
    return ms;
  });
  m.def("event_device", [](std::uintptr_t e) {
    int32_t d = -1;
    check(accel_event_device(event_of(e), &d));
    return d;
  });
  m.def("event_native_handle", [](std::uintptr_t e) {
    accel_native_handle_t h{};
    h.struct_size = sizeof h;
    check(accel_event_native_handle(event_of(e), &h));
    return native_dict(h);
  });
}

std::vector<std::pair<std::string, int64_t>> to_pairs(const std::vector<accel_memory_stat_t>& v,
                                                      size_t count) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (size_t i = 0; i < count && i < v.size(); ++i) out.emplace_back(v[i].name, v[i].value);
  return out;
}

void def_memory(py::module_& m) {
  m.def("empty_cache", [](int32_t d) { check(nogil([&] { return accel_empty_cache(d); })); });
  m.def("empty_host_cache", [] { check(nogil([] { return accel_empty_host_cache(); })); });
  m.def("mem_get_info", [](int32_t d) {
    size_t free_bytes = 0, total = 0;
    check(accel_mem_get_info(d, &free_bytes, &total));
    return std::make_pair(free_bytes, total);
  });
  m.def("memory_stats_list", [](int32_t d) {
    size_t count = 0;
    check(accel_memory_stats_list(d, nullptr, 0, &count));
    std::vector<accel_memory_stat_t> v(count);
    check(accel_memory_stats_list(d, v.data(), v.size(), &count));
    return to_pairs(v, count);
  });
  m.def("host_memory_stats_list", [] {
    size_t count = 0;
    check(accel_host_memory_stats_list(nullptr, 0, &count));
    std::vector<accel_memory_stat_t> v(count);
    check(accel_host_memory_stats_list(v.data(), v.size(), &count));
    return to_pairs(v, count);
  });
  m.def("reset_peak_memory_stats", [](int32_t d) { check(accel_reset_peak_memory_stats(d)); });
  m.def("reset_accumulated_memory_stats",
        [](int32_t d) { check(accel_reset_accumulated_memory_stats(d)); });
  m.def("memory_snapshot", [](int32_t d) {
    size_t length = 0;
    check(accel_memory_snapshot(d, nullptr, 0, &length));
    std::string out(length + 1, '\0');
    check(accel_memory_snapshot(d, out.data(), out.size(), &length));
    out.resize(length);
    return out;
  });
  m.def("record_memory_history", [](size_t n) { check(accel_record_memory_history(n)); });
  m.def("allocator_backend", [] { return std::string(accel_get_allocator_backend()); });
}

void def_buffers(py::module_& m) {
  py::class_<DeviceBuffer>(m, "DeviceBuffer")
      .def(py::init<size_t, std::uintptr_t>(), py::arg("nbytes"), py::arg("stream") = 0)
      .def_property_readonly("ptr", &DeviceBuffer::ptr)
      .def_property_readonly("nbytes", &DeviceBuffer::nbytes)
      .def_property_readonly("device_index", &DeviceBuffer::device)
      .def_property_readonly("stream_id", &DeviceBuffer::stream)
      .def("_copy_from", &DeviceBuffer::copy_from)
      .def("_copy_to", &DeviceBuffer::copy_to)
      .def("_fill", &DeviceBuffer::fill)
      .def("_record_stream", &DeviceBuffer::record_stream);
  py::class_<HostBuffer>(m, "HostBuffer", py::buffer_protocol())
      .def(py::init<size_t>(), py::arg("nbytes"))
      .def_property_readonly("ptr", &HostBuffer::ptr)
      .def_property_readonly("nbytes", &HostBuffer::nbytes)
      .def_buffer(&HostBuffer::info);
  m.def("dlpack_capsule", &dlpack_capsule);
  m.def("order_native", &order_native);
}

// --- graphs (accel.h's capture and replay; _graphs.py wraps them) -----------

accel_graph_t graph_of(std::uintptr_t h) { return as_handle<accel_graph_s>(h); }

void def_graphs(py::module_& m) {
  m.def("stream_begin_capture", [](std::uintptr_t s, int mode, uint64_t pool) {
    check(accel_stream_begin_capture(stream_of(s), static_cast<accel_capture_mode_t>(mode), pool));
  });
  m.def("stream_end_capture", [](std::uintptr_t s) {
    accel_graph_t g = nullptr;
    const accel_status_t st = accel_stream_end_capture(stream_of(s), &g);
    if (st == ACCEL_ERROR_INVALID_ARGUMENT) check(st);  // nothing changed
    // The host functions of the streams this capture released go to the
    // graph (or, without one, are dropped: nothing will run them).
    std::vector<PyObject*> fns;
    for (auto it = g_capture_fns.begin(); it != g_capture_fns.end();) {
      if (it->first != s && capturing(it->first)) {
        ++it;
        continue;
      }
      fns.insert(fns.end(), it->second.begin(), it->second.end());
      it = g_capture_fns.erase(it);
    }
    if (st != ACCEL_SUCCESS) {
      for (PyObject* f : fns) Py_DECREF(f);
      check(st);
    }
    if (!fns.empty()) g_graph_fns[id_of(g)] = std::move(fns);
    return id_of(g);
  });
  m.def("stream_capture_status", [](std::uintptr_t s) {
    accel_capture_status_t st = ACCEL_CAPTURE_STATUS_NONE;
    check(accel_stream_capture_status(stream_of(s), &st));
    return static_cast<int>(st);
  });
  m.def("graph_instantiate", [](std::uintptr_t g) { check(accel_graph_instantiate(graph_of(g))); });
  m.def("graph_replay", [](std::uintptr_t g, std::uintptr_t s) {
    auto it = g_graph_fns.find(g);
    const std::vector<PyObject*> none;
    const std::vector<PyObject*>& fns = it == g_graph_fns.end() ? none : it->second;
    for (PyObject* f : fns) Py_INCREF(f);  // one per run of this replay
    g_host_calls_pending.fetch_add(static_cast<long>(fns.size()));
    const accel_status_t st = nogil([&] { return accel_graph_replay(graph_of(g), stream_of(s)); });
    if (st != ACCEL_SUCCESS) {
      for (PyObject* f : fns) Py_DECREF(f);
      g_host_calls_pending.fetch_sub(static_cast<long>(fns.size()));
      check(st);
    }
  });
  m.def("graph_destroy", [](std::uintptr_t g) {
    check(accel_graph_destroy(graph_of(g)));
    // Queued replays hold their own references: the capture's can go.
    if (auto it = g_graph_fns.find(g); it != g_graph_fns.end()) {
      for (PyObject* f : it->second) Py_DECREF(f);
      g_graph_fns.erase(it);
    }
  });
  m.def("graph_debug_dump", [](std::uintptr_t g, const std::string& path) {
    check(accel_graph_debug_dump(graph_of(g), path.c_str()));
  });
  m.def("graph_pool_handle", [](int32_t d) {
    uint64_t pool = 0;
    check(accel_graph_pool_handle(d, &pool));
    return pool;
  });
  m.def("graph_pool", [](std::uintptr_t g) {
    uint64_t pool = 0;
    check(accel_graph_pool(graph_of(g), &pool));
    return pool;
  });
}

// --- modules and kernels (_modules.py wraps them) ---------------------------

accel_module_t module_of(std::uintptr_t h) { return as_handle<accel_module_s>(h); }
accel_kernel_t kernel_of(std::uintptr_t h) { return as_handle<accel_kernel_s>(h); }

// images: (format, bytes) pairs, in the caller's order.
std::uintptr_t module_load(int32_t device, const std::vector<std::pair<int, py::bytes>>& images,
                           std::optional<std::string> options) {
  std::vector<std::string> data;  // owns the bytes while the backend builds
  std::vector<accel_module_image_t> im;
  data.reserve(images.size());
  for (const auto& [format, bytes] : images) {
    data.emplace_back(bytes);
    im.push_back({static_cast<accel_module_format_t>(format), data.back().data(), data.back().size()});
  }
  accel_module_t m = nullptr;
  const char* opts = options ? options->c_str() : nullptr;
  check(nogil([&] { return accel_module_load(device, im.data(), im.size(), opts, &m); }));
  return id_of(m);
}

std::uintptr_t module_load_file(int32_t device, const std::vector<std::string>& paths,
                                std::optional<std::string> options) {
  std::vector<const char*> p;
  for (const std::string& path : paths) p.push_back(path.c_str());
  accel_module_t m = nullptr;
  const char* opts = options ? options->c_str() : nullptr;
  check(nogil([&] { return accel_module_load_file(device, p.data(), p.size(), opts, &m); }));
  return id_of(m);
}

// args: (kind, value, type) per argument: VALUE's bytes, DEVICE_POINTER's
// address, LOCAL_MEMORY's size; type an accel_kernel_arg_type_t.
void kernel_launch(std::uintptr_t k, std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block,
                   size_t shared_bytes, std::uintptr_t stream,
                   const std::vector<std::tuple<int, py::object, int>>& args) {
  std::vector<std::string> values;  // VALUE arguments' bytes
  std::vector<std::uintptr_t> pointers;
  values.reserve(args.size());
  pointers.reserve(args.size());
  std::vector<accel_kernel_arg_t> a;
  std::vector<int32_t> types;
  for (const auto& [kind, value, type] : args) {
    accel_kernel_arg_t arg{};
    arg.kind = static_cast<accel_kernel_arg_kind_t>(kind);
    if (kind == ACCEL_KERNEL_ARG_VALUE) {
      values.emplace_back(value.cast<py::bytes>());
      arg.size = values.back().size();
      arg.value = values.back().data();
    } else if (kind == ACCEL_KERNEL_ARG_DEVICE_POINTER) {
      pointers.push_back(value.cast<std::uintptr_t>());
      arg.size = sizeof(void*);
      arg.value = reinterpret_cast<const void*>(pointers.back());
    } else {
      arg.size = value.cast<size_t>();
      arg.value = nullptr;
    }
    a.push_back(arg);
    types.push_back(type);
  }
  accel_launch_config_t c{};
  c.struct_size = sizeof c;
  c.grid = {grid[0], grid[1], grid[2]};
  c.block = {block[0], block[1], block[2]};
  c.shared_bytes = shared_bytes;
  c.stream = stream_of(stream);
  c.arg_types = types.data();
  check(nogil([&] { return accel_launch_kernel(kernel_of(k), &c, a.data(), a.size()); }));
}

void def_modules(py::module_& m) {
  m.def("module_load", &module_load);
  m.def("module_load_file", &module_load_file);
  m.def("module_format", [](std::uintptr_t h) {
    accel_module_format_t f = ACCEL_MODULE_FORMAT_PTX;
    check(accel_module_format(module_of(h), &f));
    return static_cast<int>(f);
  });
  m.def("module_unload", [](std::uintptr_t h) {
    check(nogil([&] { return accel_module_unload(module_of(h)); }));
  });
  m.def("module_get_kernel", [](std::uintptr_t h, const std::string& name) {
    accel_kernel_t k = nullptr;
    check(accel_module_get_kernel(module_of(h), name.c_str(), &k));
    return id_of(k);
  });
  m.def("kernel_attributes", [](std::uintptr_t k) {
    accel_kernel_attributes_t at{};
    at.struct_size = sizeof at;
    check(accel_kernel_get_attributes(kernel_of(k), &at));
    py::dict d;
    d["max_threads_per_block"] = at.max_threads_per_block;
    d["static_shared_bytes"] = at.static_shared_bytes;
    d["private_bytes"] = at.private_bytes;
    d["num_registers"] = at.num_registers;
    d["preferred_block_multiple"] = at.preferred_block_multiple;
    d["num_args"] = at.num_args;
    return d;
  });
  m.def("kernel_launch", &kernel_launch);
  m.def("module_build_log", [] {
    size_t length = 0;
    accel_module_build_log(nullptr, 0, &length);
    std::string log(length + 1, '\0');
    accel_module_build_log(log.data(), log.size(), &length);
    log.resize(std::min(length, log.size() - 1));
    return log;
  });
}

// --- the hot calls --------------------------------------------------------------
// accel.current_device_index() and accel.current_stream(), which
// device-agnostic code calls around every operation, are these functions
// themselves rather than Python wrappers: each is then one C call and the
// argument handling next to what any pybind11 call costs
// (tests/bench/bench_python.py measures them against empty bindings).
// accel.device_index stays a Python class (__init__.py): a pybind11 class
// costs more to construct than a Python class with __slots__.

// Set once by _streams.py (set_stream_tables), never released: the Streams
// current_stream() hands out, by handle (an int): weak references to the
// Stream objects that own their stream, and borrowed views; the Python
// function that makes a view, and _device._get_device_index for every device
// argument but None and a plain int.
PyObject* g_stream_owners = nullptr;
PyObject* g_stream_views = nullptr;
PyObject* g_wrap_stream = nullptr;
PyObject* g_get_device_index = nullptr;

// torch's _get_device_index: None (when optional) and ints here, the rest
// (str, accel.device, the errors) in Python.
int32_t device_index_of(PyObject* index) {
  int overflow = 0;
  const long v = PyLong_AsLongAndOverflow(index, &overflow);
  if (v == -1 && PyErr_Occurred() != nullptr) throw py::error_already_set();
  if (overflow != 0 || v < INT32_MIN || v > INT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, "device index out of the int32 range");
    throw py::error_already_set();
  }
  return static_cast<int32_t>(v);
}

int32_t device_arg(py::handle dev, bool optional) {
  if (optional && dev.is_none()) return accel_current_device_index();
  if (PyLong_CheckExact(dev.ptr())) return device_index_of(dev.ptr());
  if (g_get_device_index == nullptr) throw std::runtime_error("accel._streams is not imported");
  PyObject* r = PyObject_CallFunctionObjArgs(g_get_device_index, dev.ptr(),
                                             optional ? Py_True : Py_False, nullptr);
  if (r == nullptr) throw py::error_already_set();
  py::object index = py::reinterpret_steal<py::object>(r);
  return device_index_of(index.ptr());
}

// The Stream object for a handle: its owner while it lives, else the view
// made before, else a new view (_streams._wrap keeps it).
py::object stream_object(accel_stream_t s) {
  if (g_wrap_stream == nullptr) throw std::runtime_error("accel._streams is not imported");
  py::object key = py::reinterpret_steal<py::object>(PyLong_FromVoidPtr(s));
  if (!key) throw py::error_already_set();
  if (PyObject* ref = PyDict_GetItemWithError(g_stream_owners, key.ptr())) {
    PyObject* owner = PyWeakref_GetObject(ref);
    if (owner != nullptr && owner != Py_None) return py::reinterpret_borrow<py::object>(owner);
  }
  if (PyObject* view = PyDict_GetItemWithError(g_stream_views, key.ptr()))
    return py::reinterpret_borrow<py::object>(view);
  if (PyErr_Occurred()) throw py::error_already_set();
  PyObject* made = PyObject_CallOneArg(g_wrap_stream, key.ptr());
  if (made == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(made);
}

// exchange_device(d) and maybe_exchange_device(d), which device_index's
// __enter__ and __exit__ make: plain CPython METH_O functions, without
// pybind11's dispatcher, so that a with block costs little more than
// Python's with statement itself. Each returns the previous device index.
template <accel_status_t (*Exchange)(int32_t, int32_t*)>
PyObject* exchange_raw(PyObject*, PyObject* arg) {
  const long d = PyLong_AsLong(arg);
  if (d == -1 && PyErr_Occurred() != nullptr) return nullptr;
  if (d < INT32_MIN || d > INT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, "device index out of the int32 range");
    return nullptr;
  }
  int32_t prev = -1;
  const accel_status_t st = Exchange(static_cast<int32_t>(d), &prev);
  if (st != ACCEL_SUCCESS) {
    raise_status(StatusError{st, accel_last_error()});
    return nullptr;
  }
  return PyLong_FromLong(prev);
}

PyMethodDef g_exchange_defs[] = {
    {"exchange_device", exchange_raw<accel_exchange_device>, METH_O,
     "exchange_device(device, /)\n--\n\naccel_exchange_device: makes `device` current; the previous index."},
    {"maybe_exchange_device", exchange_raw<accel_maybe_exchange_device>, METH_O,
     "maybe_exchange_device(device, /)\n--\n\naccel_maybe_exchange_device: as exchange_device;\n"
     "a negative index changes nothing."},
};

void def_hot_calls(py::module_& m) {
  for (PyMethodDef& def : g_exchange_defs) {
    PyObject* fn = PyCFunction_NewEx(&def, nullptr, m.attr("__name__").ptr());
    if (fn == nullptr) throw py::error_already_set();
    m.attr(def.ml_name) = py::reinterpret_steal<py::object>(fn);
  }
  m.def("set_stream_tables", [](py::dict owners, py::dict views, py::function wrap,
                                py::function get_device_index) {
    for (PyObject** slot : {&g_stream_owners, &g_stream_views, &g_wrap_stream, &g_get_device_index})
      Py_XDECREF(*slot);
    g_stream_owners = owners.release().ptr();
    g_stream_views = views.release().ptr();
    g_wrap_stream = wrap.release().ptr();
    g_get_device_index = get_device_index.release().ptr();
  });
  py::options options;  // signatures as for current_device_index (def_devices)
  options.disable_function_signatures();
  m.attr("current_stream_object") = py::cpp_function(
      [](py::handle dev) {
        accel_stream_t s = nullptr;
        check(accel_current_stream(device_arg(dev, true), &s));
        return stream_object(s);
      },
      py::name("current_stream"), py::arg("device") = py::none(), py::pos_only(),
      py::doc("current_stream(device=None, /)\n--\n\n"
              "The calling thread's current accel.Stream on `device` (None: the current device;\n"
              "an int, a str such as \"sim:1\" or an accel.device). torch.accelerator.current_stream."));
}

}  // namespace

PYBIND11_MODULE(_accel, m) {
  m.doc() = "The accel C API (accel.h) for the accel package; use `accel`, not this module.";
  def_errors(m);
  def_devices(m);
  def_streams(m);
  def_events(m);
  def_memory(m);
  def_buffers(m);
  def_graphs(m);
  def_modules(m);
  def_hot_calls(m);
}
