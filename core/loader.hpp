// Plugin discovery and loading: search path, policy checks, dlopen, vtable
// validation, init and device count. Never initialises a vendor context.
#pragma once

#include <memory>
#include <vector>

#include "backend.hpp"

namespace accel::core {

// Every candidate and refused path entry, in discovery order. Entries that
// loaded have `loaded` set and a status of available / no_devices /
// unavailable.
std::vector<std::unique_ptr<Backend>> discover_plugins();

}  // namespace accel::core
