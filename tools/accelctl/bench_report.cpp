// bench_report.cpp - `accelctl bench`'s output: the text table per device,
// the JSON document, the SVG plot; and the command itself.
#include <accel/accel.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "commands.hpp"
#include "info.hpp"
#include "svg_plot.hpp"

namespace accelctl {
namespace {

nlohmann::json number_or_null(const std::optional<double>& v) {
  if (v && std::isfinite(*v)) return *v;
  return nullptr;
}
template <class T>
nlohmann::json optional_json(const std::optional<T>& v) {
  if (v) return *v;
  return nullptr;
}

std::string timer_text(const std::string& timer) {
  return timer == "events" ? "events (accel_event_elapsed_time)"
                           : "host (steady_clock around a stream synchronize)";
}

const BandwidthPoint* point_of(const Series& s, uint64_t bytes) {
  for (const auto& p : s.points)
    if (p.bytes == bytes) return &p;
  return nullptr;
}

void print_device(const BenchResult& r, const DeviceBench& d) {
  std::string mem;
  if (d.free_bytes && d.total_bytes)
    mem = fmt::format(", free {} of {}", gib_string(*d.free_bytes), gib_string(*d.total_bytes));
  fmt::print("\nDevice {}: {}{} ({:.1f} s)\n", d.index, d.name, mem, d.seconds);
  if (!d.series.empty() && d.series.front().key != "setup") {
    std::vector<size_t> widths;
    std::string head = fmt::format("  {:>8}", "size");
    // The host memcpy column last: the ceiling each series is read against.
    std::vector<const Series*> cols;
    for (const auto& s : d.series) cols.push_back(&s);
    if (!r.host_memcpy.points.empty()) cols.push_back(&r.host_memcpy);
    for (const Series* s : cols) {
      widths.push_back(std::max<size_t>(s->label.size(), 9));
      head += fmt::format("  {:>{}}", s->label, widths.back());
    }
    fmt::print("{}   (GB/s)\n", head);
    for (uint64_t bytes : r.sizes) {
      if (bytes > d.max_bytes) break;
      std::string line = fmt::format("  {:>8}", size_text(bytes));
      for (size_t i = 0; i < cols.size(); ++i) {
        const BandwidthPoint* p = point_of(*cols[i], bytes);
        line += p != nullptr ? fmt::format("  {:>{}.2f}", p->gbps, widths[i])
                             : fmt::format("  {:>{}}", "-", widths[i]);
      }
      fmt::print("{}\n", line);
    }
  }
  if (!d.latencies.empty()) {
    fmt::print("  latency (us, median):\n");
    for (const auto& l : d.latencies) {
      const std::string value = l.us               ? fmt::format("{:10.2f}", *l.us)
                                : !l.error.empty() ? "     error"
                                                   : "       n/a";
      fmt::print("    {:<44}{}{}\n", l.label, value, l.note.empty() ? "" : "  " + l.note);
    }
  }
  for (const auto& n : d.notes) fmt::print("  note: {}\n", n);
  for (const auto& s : d.series)
    if (!s.error.empty()) fmt::print("  error: {}: {}\n", s.label, s.error);
  for (const auto& l : d.latencies)
    if (!l.error.empty()) fmt::print("  error: {}: {}\n", l.label, l.error);
}

void print_text(const BenchResult& r) {
  fmt::print("bench: backend {}, {} device{}, timer {}{}\n", r.backend, r.devices.size(),
             r.devices.size() == 1 ? "" : "s", timer_text(r.timer), r.quick ? ", quick" : "");
  fmt::print("bandwidth: GB/s (1e9 bytes/s) of bytes copied, median of batches; sizes {} to {}\n",
             r.sizes.empty() ? "-" : size_text(r.sizes.front()),
             r.sizes.empty() ? "-" : size_text(r.sizes.back()));
  fmt::print(
      "ceiling: 'host memcpy' is memcpy between two pageable host buffers, host clock: the "
      "limit of a copy where device memory is host memory (CPU devices); a GPU's is its link\n");
  if (!r.host_memcpy.error.empty()) fmt::print("error: host memcpy: {}\n", r.host_memcpy.error);
  for (const auto& d : r.devices) print_device(r, d);
  fmt::print("\nbench: {:.1f} s{}\n", r.seconds, r.failed() ? ", with errors" : "");
}

nlohmann::json to_json(const BenchResult& r) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : r.devices) {
    nlohmann::json series = nlohmann::json::object(), labels = nlohmann::json::object(),
                   errors = nlohmann::json::object();
    for (const auto& s : d.series) {
      if (!s.error.empty()) errors[s.key] = s.error;
      if (s.key == "setup") continue;
      nlohmann::json pts = nlohmann::json::array();
      for (const auto& p : s.points)
        pts.push_back({{"bytes", p.bytes}, {"gbps", p.gbps}, {"reps", p.reps}});
      series[s.key] = std::move(pts);
      labels[s.key] = s.label;
    }
    nlohmann::json lat = nlohmann::json::object(), lat_notes = nlohmann::json::object();
    for (const auto& l : d.latencies) {
      lat[l.key] = number_or_null(l.us);
      if (!l.note.empty()) lat_notes[l.key] = l.note;
      if (!l.error.empty()) errors[l.key] = l.error;
    }
    nlohmann::json peer = nullptr;
    if (d.peer_device) peer = {{"to", *d.peer_device}, {"access", d.peer_access}};
    devices.push_back({{"index", d.index},
                       {"name", d.name},
                       {"free_bytes", optional_json(d.free_bytes)},
                       {"total_bytes", optional_json(d.total_bytes)},
                       {"max_bytes", d.max_bytes},
                       {"seconds", d.seconds},
                       {"series", std::move(series)},
                       {"labels", std::move(labels)},
                       {"peer", std::move(peer)},
                       {"latency_us", std::move(lat)},
                       {"latency_notes", std::move(lat_notes)},
                       {"notes", d.notes},
                       {"errors", std::move(errors)}});
  }
  nlohmann::json host_memcpy = nlohmann::json::array();
  for (const auto& p : r.host_memcpy.points)
    host_memcpy.push_back({{"bytes", p.bytes}, {"gbps", p.gbps}, {"reps", p.reps}});
  nlohmann::json j = {{"backend", r.backend}, {"timer", r.timer},
                      {"quick", r.quick},     {"sizes", r.sizes},
                      {"seconds", r.seconds}, {"devices", std::move(devices)},
                      {"host_memcpy", std::move(host_memcpy)},
                      {"passed", !r.failed()}};
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.host_memcpy.error.empty()) j["host_memcpy_error"] = r.host_memcpy.error;
  return j;
}

std::string to_svg(const BenchResult& r) {
  std::vector<svg::Chart> charts;
  for (const auto& d : r.devices) {
    svg::Chart c;
    c.title = fmt::format("device {}: {}", d.index, d.name);
    c.x_label = "transfer size (log2 scale)";
    c.y_label = "bandwidth (GB/s)";
    c.group_attrs = fmt::format("data-device=\"{}\"", d.index);
    c.x_tick_text = [](double x) { return size_text(static_cast<uint64_t>(std::llround(x))); };
    for (const auto& s : d.series) {
      if (s.points.empty()) continue;
      svg::Series out{s.key, s.label, {}};
      for (const auto& p : s.points) out.points.emplace_back(static_cast<double>(p.bytes), p.gbps);
      c.series.push_back(std::move(out));
    }
    if (!c.series.empty() && !r.host_memcpy.points.empty()) {
      svg::Series ceiling{"host_memcpy", "host memcpy (ceiling)", {}};
      ceiling.dashed = true;
      for (const auto& p : r.host_memcpy.points)
        ceiling.points.emplace_back(static_cast<double>(p.bytes), p.gbps);
      c.series.push_back(std::move(ceiling));
    }
    charts.push_back(std::move(c));
  }
  return svg::render(fmt::format("accelctl bench: backend {}, timer {}{}", r.backend, r.timer,
                                 r.quick ? ", quick" : ""),
                     charts);
}

}  // namespace

int run_bench(const BenchOptions& opts, bool json, const std::string& svg_file,
              const char* self_exe) {
  if (accel_is_available() == 0) {
    if (json) {
      fmt::print("{}\n", json_document({{"backend", nullptr},
                                        {"selection_reason", accel_selection_reason()},
                                        {"devices", nlohmann::json::array()},
                                        {"passed", false}}));
    } else {
      fmt::print("bench: no accelerator available: {}\n", accel_selection_reason());
    }
    return 1;
  }
  const int32_t count = accel_device_count();
  if (opts.device >= count) {
    std::fprintf(stderr, "accelctl bench: --device %d: the accelerator has %d device%s\n",
                 static_cast<int>(opts.device), static_cast<int>(count), count == 1 ? "" : "s");
    return 2;
  }
  if (!json) {
    fmt::print("bench: measuring on {} ({}), this takes {}...\n", accel_current_accelerator(),
               opts.device >= 0 ? fmt::format("device {}", opts.device) : "every device",
               opts.quick ? "a few seconds" : "several seconds per device");
    std::fflush(stdout);
  }
  const BenchResult r = run_bench_measurements(opts, self_exe);
  int rc = r.failed() ? 1 : 0;
  if (!svg_file.empty()) {
    std::ofstream f(svg_file, std::ios::binary | std::ios::trunc);
    f << to_svg(r);
    f.close();
    if (!f) {
      std::fprintf(stderr, "accelctl bench: cannot write %s\n", svg_file.c_str());
      rc = 1;
    }
  }
  if (json)
    fmt::print("{}\n", json_document(to_json(r)));
  else
    print_text(r);
  return rc;
}

}  // namespace accelctl
