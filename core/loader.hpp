// Plugin discovery and loading: search path, policy checks, dlopen, vtable
// validation, init and device count. Never initialises a vendor context.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"

namespace accel::core {

// ACCEL_BACKEND, read once per discovery (secure_getenv) and validated
// here: discovery narrows what it opens only for a valid name, and the
// selection (runtime.cpp) reports any set value that no backend took.
struct BackendRequest {
  std::string name;    // the variable's value; empty when unset or empty
  bool valid = false;  // `name` is of the form [a-z0-9_]{1,64}
};
BackendRequest requested_backend();

// Every candidate and refused path entry, in discovery order. Entries that
// loaded have `loaded` set and a status of available / no_devices /
// unavailable. When none loaded, warns with every folder searched (and which
// do not exist) and stores that list in *searched when given.
std::vector<std::unique_ptr<Backend>> discover_plugins(const BackendRequest& request,
                                                       std::string* searched = nullptr);

}  // namespace accel::core
