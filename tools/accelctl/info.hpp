// info.hpp - what accelctl gathers from libaccelcore, and its JSON form.
#pragma once

#include <accel/accel.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accelctl {

// The shape of every JSON document `--json` prints, as its top-level
// "schema_version". README.md ("JSON output") says when it changes.
constexpr int kJsonSchemaVersion = 1;

// One discovery entry (accel_get_backend_info), copied out of the library.
struct BackendEntry {
  std::string name;
  std::string path;
  std::string status;  // accel_backend_status_name(), or "unknown" if the query failed
  std::string reason;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  int32_t priority = 0;
  int32_t device_count = 0;
  uint32_t capabilities = 0;
  bool current = false;
  std::string runtime_version;  // vendor driver/runtime version; "" when unknown
};

// Properties of one device of the current accelerator.
struct DeviceEntry {
  int32_t index = 0;
  bool props_ok = false;
  std::string props_error;  // failure detail when !props_ok
  accel_device_properties_t props{};
  // accel_mem_get_info: both set on success, empty when not supported or failed.
  std::optional<uint64_t> free_bytes;
  std::optional<uint64_t> total_bytes;
  std::string mem_info_error;  // set only on a failure other than NOT_SUPPORTED
  // accel_device_get_attribute, indexed by accel_device_attr_t: empty where
  // the backend cannot answer (NOT_SUPPORTED). Empty vector: no attributes.
  std::vector<std::optional<int64_t>> attributes;
  std::string attributes_error;  // a failure other than NOT_SUPPORTED
  // accel_get_device_capability's supported_dtypes, when it answered.
  std::optional<uint64_t> supported_dtypes;
  // accel_device_module_formats (ACCEL_MODULE_FORMAT_BIT mask; 0: no modules).
  std::optional<uint64_t> module_formats;
  bool ok() const { return props_ok && mem_info_error.empty() && attributes_error.empty(); }
};

// "accel_malloc: ACCEL_ERROR_OUT_OF_MEMORY (device memory exhausted): <last error>".
std::string failure_detail(const char* call, accel_status_t status);

std::vector<BackendEntry> gather_backends();
// Names of the dtypes whose ACCEL_DTYPE_BIT is set ("float32", ...).
std::vector<std::string> dtype_names(uint64_t dtypes);
// Names of the formats whose ACCEL_MODULE_FORMAT_BIT is set ("ptx", ...).
std::vector<std::string> module_format_names(uint64_t formats);
// The current accelerator's entry, or nullptr.
const BackendEntry* find_current(const std::vector<BackendEntry>& entries);
DeviceEntry gather_device(int32_t index);

// Capability bits as words, in bit order.
std::vector<std::string> capability_words(uint32_t caps);
// 8-4-4-4-12 lowercase hex.
std::string uuid_string(const uint8_t uuid[16]);
// "16.00 GiB".
std::string gib_string(uint64_t bytes);
// A backend name for text output ("(unnamed)" for "").
std::string display_name(const std::string& name);
// The runtime version for text output: the plugin's text, "-" for an entry
// that did not load, "unknown (plugin ABI 1.0)" for a plugin older than the
// runtime_version member, else "unknown".
std::string runtime_version_text(const BackendEntry& entry);
// The runtime version for JSON: the plugin's text, or null when unknown.
nlohmann::json runtime_version_json(const BackendEntry& entry);

// Current accelerator as JSON (string or null).
nlohmann::json current_accelerator_json();
nlohmann::json to_json(const BackendEntry& entry);
nlohmann::json to_json(const DeviceEntry& entry);

// Serialises with 2-space indent; invalid UTF-8 (from paths, dlerror text) is
// replaced instead of throwing.
std::string json_text(const nlohmann::json& value);
// A whole `--json` document: `doc` (an object) with "schema_version" added,
// serialised as json_text does.
std::string json_document(nlohmann::json doc);

}  // namespace accelctl
