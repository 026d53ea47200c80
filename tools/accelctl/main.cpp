// main.cpp - accelctl command-line wiring (CLI11). No accel call happens
// before parsing finishes: `--backend` must reach ACCEL_BACKEND first.
#include <accel/accel.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "bench.hpp"
#include "commands.hpp"

namespace {

constexpr const char* kDescription =
    "accelctl - diagnostics for the accel accelerator runtime.\n"
    "\n"
    "Without a subcommand: a summary of the current accelerator (or 'none' and\n"
    "why) and one line per backend candidate (name, status, devices, reason).\n"
    "Exits 0 even when no accelerator is available.\n"
    "\n"
    "--backend NAME and --json are accepted before or after any subcommand.\n"
    "JSON: {\"schema_version\", \"version\", \"current_accelerator\", \"selection_reason\",\n"
    "\"device_count\", \"backends\": [...]}; every JSON document has \"schema_version\"\n"
    "(1 for this shape).\n"
    "\n"
    "Environment: ACCEL_PLUGIN_PATH (extra plugin directories, colon-separated,\n"
    "absolute), ACCEL_BACKEND (force a backend), ACCEL_LOG_LEVEL (trace..off),\n"
    "ACCEL_ALLOC_CONF (the device memory allocator: accelctl memory).";

void add_json_flag(CLI::App& app, bool& json) {
  app.add_flag("--json", json, "Print machine-readable JSON instead of text");
}

// On the app and on every subcommand, all writing the same string, so the
// option is global whichever side of the subcommand it is given on.
void add_backend_option(CLI::App& app, std::string& name) {
  app.add_option("--backend", name,
                 "Use exactly this backend (sets ACCEL_BACKEND for this process, over any "
                 "value it had)");
}

// What the command line asked for: the values CLI11 writes while parsing
// and the subcommands, to see which one was given. Options are bound to the
// members' addresses, so it stays where it was made.
struct CommandLine {
  bool json = false;
  std::string backend_name;
  CLI::App* backends = nullptr;
  CLI::App* devices = nullptr;
  CLI::App* selftest = nullptr;
  CLI::App* memory = nullptr;
  CLI::App* bench = nullptr;
  std::string snapshot_file;
  std::string dump_file;
  accelctl::BenchOptions bench_opts;
  std::string svg_file;
  bool alloc_probe = false;
};

void add_backends_command(CLI::App& app, CommandLine& cl) {
  CLI::App* backends = cl.backends =
      app.add_subcommand("backends", "List every backend candidate and its status");
  backends->footer(
      "List every backend candidate found by discovery: name, resolved path, status\n"
      "(available, no_devices, unavailable, rejected, duplicate), the reason for it,\n"
      "plugin ABI version, priority, device count, declared capabilities\n"
      "(native_current_device, fork_safe, timing_events, host_functions,\n"
      "stream_priorities), the vendor driver/runtime version the plugin reports\n"
      "and which one is the current accelerator (*).\n"
      "JSON: {\"schema_version\", \"current_accelerator\", \"selection_reason\",\n"
      "\"backends\": [{..., \"runtime_version\"}]}.");
  add_json_flag(*backends, cl.json);
  add_backend_option(*backends, cl.backend_name);
}

void add_devices_command(CLI::App& app, CommandLine& cl) {
  CLI::App* devices = cl.devices =
      app.add_subcommand("devices", "Show the devices of the current accelerator");
  devices->footer(
      "Show the properties of every device of the current accelerator: name, vendor,\n"
      "total memory (bytes and GiB), UUID, PCI bus id, architecture, compute units,\n"
      "how it replays graphs ('native (CUDA graphs)', 'recorded by accel'),\n"
      "and free/total memory where the backend can tell (else 'not supported', null\n"
      "in JSON), the element types it holds (torch's get_device_capability) and every\n"
      "device attribute (accel_device_get_attribute; '-' or null where the backend\n"
      "cannot answer one), after the backend's vendor driver/runtime version.\n"
      "Exits 1 if a device could not be queried.\n"
      "JSON: {\"schema_version\", \"current_accelerator\", \"selection_reason\",\n"
      "\"runtime_version\", \"device_count\", \"devices\": [{..., \"mem_info\",\n"
      "\"supported_dtypes\", \"module_formats\", \"attributes\": {\"warp_size\": 32, ...}}]}.");
  add_json_flag(*devices, cl.json);
  add_backend_option(*devices, cl.backend_name);
}

void add_selftest_command(CLI::App& app, CommandLine& cl) {
  CLI::App* selftest = cl.selftest =
      app.add_subcommand("selftest", "Run a short workload on every device (PASS/FAIL per check)");
  selftest->footer(
      "Run a short workload on every device of the current accelerator and print\n"
      "each check as PASS, FAIL (with the error detail) or SKIP (capability the\n"
      "backend does not declare): device guard, stream create/query/destroy,\n"
      "set_stream/current_stream, event timing around a 20 ms host function,\n"
      "event query/synchronize, 1 MiB memory round-trip (H2D, memset, D2D, D2H),\n"
      "memory statistics, host function order, device synchronize.\n"
      "Exits 0 if all checks passed, 1 if any failed or no accelerator is available.\n"
      "JSON: {\"schema_version\", \"backend\", \"devices\": [{\"index\", \"checks\":\n"
      "[{\"name\", \"passed\", \"detail\"}]}], \"passed\"}.");
  add_backend_option(*selftest, cl.backend_name);
  add_json_flag(*selftest, cl.json);
}

void add_memory_command(CLI::App& app, CommandLine& cl) {
  CLI::App* memory = cl.memory = app.add_subcommand(
      "memory", "Show the caching allocator's configuration and statistics, or read a snapshot");
  memory->footer(
      "Without options: the device allocator's backend (caching or native) and\n"
      "configuration (ACCEL_ALLOC_CONF), then for every device the main statistics of\n"
      "accel_memory_stats_list (allocated, reserved, active and requested bytes with\n"
      "their peaks, allocations, segments, vendor allocations and frees, out-of-memory\n"
      "failures). They are this accelctl process's own: to look at a program, have it\n"
      "write accel_memory_snapshot to a file and read that with --snapshot.\n"
      "--snapshot FILE: a summary of a snapshot file (docs/memory.md has its schema):\n"
      "segments (small, large), reserved, allocated, active and requested bytes,\n"
      "fragmentation (reserved / allocated), the largest free block, blocks per state,\n"
      "totals per stream, history events per action, and any inconsistency found\n"
      "(exit 1 then, or when the file is not a snapshot).\n"
      "--dump-snapshot FILE: writes the current device's snapshot to FILE.\n"
      "JSON: {\"schema_version\", \"current_accelerator\", \"selection_reason\",\n"
      "\"allocator\", \"config\", \"device_count\", \"devices\": [{\"index\", \"stats\"}]};\n"
      "with --snapshot {\"schema_version\", \"file\", \"snapshot_schema_version\",\n"
      "\"backend\", \"device\", \"allocator\", \"config\", \"capacity\", \"segments\",\n"
      "\"reserved_bytes\", \"allocated_bytes\", \"active_bytes\", \"requested_bytes\",\n"
      "\"fragmentation\", \"largest_free_block\", \"blocks\", \"streams\", \"history\",\n"
      "\"problems\"}; with --dump-snapshot {\"schema_version\", \"file\", \"device\", \"bytes\"}.");
  CLI::Option* snapshot_opt =
      memory->add_option("--snapshot", cl.snapshot_file, "Summarise this snapshot file")
          ->check(CLI::ExistingFile);
  memory
      ->add_option("--dump-snapshot", cl.dump_file,
                   "Write the current device's snapshot (JSON) to this file")
      ->excludes(snapshot_opt);
  add_backend_option(*memory, cl.backend_name);
  add_json_flag(*memory, cl.json);
}

void add_bench_command(CLI::App& app, CommandLine& cl) {
  CLI::App* bench = cl.bench = app.add_subcommand(
      "bench", "Measure copy bandwidth and event, host function, launch and allocation latency");
  bench->footer(
      "Per device of the current accelerator (or --device N): copy bandwidth in GB/s\n"
      "(1e9 bytes/s) over sizes from 4 KiB doubling to --max-bytes (256 MiB), each\n"
      "bounded by the device's memory (skipped sizes are noted): H2D and D2H from\n"
      "pageable and from pinned host memory (accel_host_malloc), D2D, and peer (this\n"
      "device to the next, accel_memcpy_peer_async; 'n/a: one device' with one).\n"
      "Each figure is the median of batches of copies, timed with timing events\n"
      "(accel_event_elapsed_time) where the backend has them, else with the host clock\n"
      "around a stream synchronize (\"timer\": \"events\" or \"host\"; --host-timer: host).\n"
      "Latencies in microseconds (median): event record + synchronize on an idle\n"
      "stream; a host function from enqueue to its start and to the stream synchronize\n"
      "returning; the 'empty' kernel of kernels/ launched in batches (launch +\n"
      "completion amortised, and the launch call alone), where the backend has\n"
      "modules; an accel_malloc + accel_free pair of 1 MiB with the caching allocator\n"
      "and with the native one (measured in a child accelctl started with\n"
      "ACCEL_ALLOC_CONF=backend:native: the allocator is chosen once per process).\n"
      "--quick: the same sizes, 3 batches each (2 from 64 MiB; the full run takes 9 and\n"
      "5, and warms up every size), smaller batches and fewer latency repetitions:\n"
      "under 10 s on sim and PoCL. The full run takes about 5 s per device there, up\n"
      "to a minute on a slow device.\n"
      "Beside the series: 'host memcpy', memcpy between two pageable host buffers over\n"
      "the same sizes (host clock), the ceiling of a copy where device memory is host\n"
      "memory (CPU devices such as sim and PoCL; a GPU's ceiling is its link).\n"
      "--svg FILE: a plot of bandwidth against transfer size, one line per direction,\n"
      "one chart per device, host memcpy dashed as the ceiling.\n"
      "Exits 1 when an accel call failed (its status and detail are printed).\n"
      "JSON: {\"schema_version\", \"backend\", \"timer\", \"quick\", \"sizes\", \"seconds\",\n"
      "\"devices\": [{\"index\", \"name\", \"free_bytes\", \"total_bytes\", \"max_bytes\",\n"
      "\"seconds\", \"series\": {\"h2d_pageable\": [{\"bytes\", \"gbps\", \"reps\"}], ...},\n"
      "\"labels\", \"peer\": {\"to\", \"access\"} or null, \"latency_us\": {\"event_round_trip\",\n"
      "\"host_func_start\", \"host_func\", \"kernel_launch\", \"kernel_enqueue\",\n"
      "\"alloc_cached\", \"alloc_native\"}, \"latency_notes\", \"notes\", \"errors\"}],\n"
      "\"host_memcpy\": [{\"bytes\", \"gbps\", \"reps\"}], \"passed\"}.");
  accelctl::BenchOptions& bench_opts = cl.bench_opts;
  bench->add_flag("--quick", bench_opts.quick,
                  "Fewer repetitions, smaller batches: under 10 s on sim and PoCL");
  bench->add_option("--device", bench_opts.device, "Measure only this device index")
      ->check(CLI::NonNegativeNumber);
  bench
      ->add_option("--max-bytes", bench_opts.max_bytes,
                   "Largest transfer size in bytes, rounded down to a power of two (default "
                   "268435456 = 256 MiB)")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 40));
  bench->add_flag("--host-timer", bench_opts.host_timer,
                  "Time copies with the host clock even where the backend has timing events");
  bench->add_option("--svg", cl.svg_file, "Write a plot of bandwidth against size to this SVG file");
  // Internal: the child that measures the other allocator (bench_latency.cpp).
  bench->add_flag("--internal-alloc-probe", cl.alloc_probe)->group("");
  add_backend_option(*bench, cl.backend_name);
  add_json_flag(*bench, cl.json);
}

// The whole command line: global options, then each subcommand, in the
// order --help lists them.
void add_command_line(CLI::App& app, CommandLine& cl) {
  app.set_version_flag(
      "--version", [] { return std::string(accel_version()); },
      "Print the accel library version and exit");
  app.require_subcommand(0, 1);
  add_json_flag(app, cl.json);
  add_backend_option(app, cl.backend_name);
  add_backends_command(app, cl);
  add_devices_command(app, cl);
  add_selftest_command(app, cl);
  add_memory_command(app, cl);
  add_bench_command(app, cl);
}

// Runs the command that was parsed (the summary when none was); an error
// escaping it is printed and exits 1.
int run_command(const CommandLine& cl) {
  try {
    if (cl.selftest->parsed()) return accelctl::run_selftest(cl.json);
    if (cl.backends->parsed()) return accelctl::run_backends(cl.json);
    if (cl.devices->parsed()) return accelctl::run_devices(cl.json);
    if (cl.memory->parsed()) return accelctl::run_memory(cl.json, cl.snapshot_file, cl.dump_file);
    if (cl.bench->parsed() && cl.alloc_probe)
      return accelctl::run_alloc_probe(cl.bench_opts.device, cl.bench_opts.max_bytes,
                                       cl.bench_opts.quick);
    if (cl.bench->parsed())
      return accelctl::run_bench(cl.bench_opts, cl.json, cl.svg_file, "/proc/self/exe");
    return accelctl::run_summary(cl.json);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "accelctl: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "accelctl"};
  CommandLine cl;
  add_command_line(app, cl);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, version or the usage error
    return rc == 0 ? 0 : 2;
  }

  // Discovery reads ACCEL_BACKEND once, at the first accel call: set it now,
  // for every command.
  if (!cl.backend_name.empty() && setenv("ACCEL_BACKEND", cl.backend_name.c_str(), 1) != 0) {
    std::perror("accelctl: setenv ACCEL_BACKEND");
    return 1;
  }

  return run_command(cl);
}
