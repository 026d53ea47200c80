// The physical floor of a pybind11 binding, for bench_python.py: calls of
// the same shapes as the accel calls it measures, doing nothing. Built with the same
// compiler, flags and pybind11 as accel._accel; never installed.
#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace {

// An object that a call hands back, as accel.current_stream() hands back a
// Stream it already has.
py::object& kept() {
  static py::object* o = new py::object(py::int_(12345));  // never freed: outlives the interpreter's teardown
  return *o;
}

}  // namespace

PYBIND11_MODULE(_accel_bench_floor, m) {
  m.doc() = "Empty pybind11 calls: the floor bench_python.py divides by.";
  m.def("noop", [] {});
  m.def("int_of_nothing", [] { return 0; });
  m.def("object_of", [](py::handle) { return kept(); }, py::arg("device") = py::none());
}
