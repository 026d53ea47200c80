// main.cpp - accelctl command-line wiring (CLI11). No accel call happens
// before parsing finishes: `--backend` must reach ACCEL_BACKEND first.
#include <accel/accel.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "accelctl"};
  app.set_version_flag(
      "--version", [] { return std::string(accel_version()); },
      "Print the accel library version and exit");
  app.require_subcommand(0, 1);

  bool json = false;
  add_json_flag(app, json);
  std::string backend_name;
  add_backend_option(app, backend_name);

  CLI::App* backends =
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
  add_json_flag(*backends, json);
  add_backend_option(*backends, backend_name);

  CLI::App* devices = app.add_subcommand("devices", "Show the devices of the current accelerator");
  devices->footer(
      "Show the properties of every device of the current accelerator: name, vendor,\n"
      "total memory (bytes and GiB), UUID, PCI bus id, architecture, compute units,\n"
      "and free/total memory where the backend can tell (else 'not supported', null\n"
      "in JSON), the element types it holds (torch's get_device_capability) and every\n"
      "device attribute (accel_device_get_attribute; '-' or null where the backend\n"
      "cannot answer one), after the backend's vendor driver/runtime version.\n"
      "Exits 1 if a device could not be queried.\n"
      "JSON: {\"schema_version\", \"current_accelerator\", \"selection_reason\",\n"
      "\"runtime_version\", \"device_count\", \"devices\": [{..., \"mem_info\",\n"
      "\"supported_dtypes\", \"module_formats\", \"attributes\": {\"warp_size\": 32, ...}}]}.");
  add_json_flag(*devices, json);
  add_backend_option(*devices, backend_name);
  CLI::App* selftest =
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
  add_backend_option(*selftest, backend_name);
  add_json_flag(*selftest, json);

  CLI::App* memory = app.add_subcommand(
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
  std::string snapshot_file, dump_file;
  CLI::Option* snapshot_opt =
      memory->add_option("--snapshot", snapshot_file, "Summarise this snapshot file")
          ->check(CLI::ExistingFile);
  memory
      ->add_option("--dump-snapshot", dump_file,
                   "Write the current device's snapshot (JSON) to this file")
      ->excludes(snapshot_opt);
  add_backend_option(*memory, backend_name);
  add_json_flag(*memory, json);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, version or the usage error
    return rc == 0 ? 0 : 2;
  }

  // Discovery reads ACCEL_BACKEND once, at the first accel call: set it now,
  // for every command.
  if (!backend_name.empty() && setenv("ACCEL_BACKEND", backend_name.c_str(), 1) != 0) {
    std::perror("accelctl: setenv ACCEL_BACKEND");
    return 1;
  }

  try {
    if (selftest->parsed()) return accelctl::run_selftest(json);
    if (backends->parsed()) return accelctl::run_backends(json);
    if (devices->parsed()) return accelctl::run_devices(json);
    if (memory->parsed()) return accelctl::run_memory(json, snapshot_file, dump_file);
    return accelctl::run_summary(json);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "accelctl: error: %s\n", e.what());
    return 1;
  }
}
