// accel_test::run: Catch2's Session for test programs with command-line
// options of their own, without compiling Catch2's implementation into each
// of them (it lives once in catch_impl.cpp, which defines run()). Catch2 v2
// declares Catch::Session only next to its implementation, so programs that
// need it go through this small interface instead.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace accel_test {

// One extra option `--name VALUE`, stored as text into *value.
struct Option {
  std::string* value;
  const char* flag;  // "--backend"
  const char* hint;  // "name"
  const char* help;
};

// What setup() sees once the command line is parsed.
struct Parsed {
  bool listing = false;               // --list-tests and friends: nothing will run
  std::vector<std::string>* filters;  // test names/tags given; setup may add defaults
};

// Parses argv with Catch2's options plus `options`, calls `setup` (not for
// --help), then runs the selected test cases. setup returns -1 to go on, or
// an exit code to stop with. A filter that matches no test case fails the
// run (exit 2) instead of passing with nothing run. Returns the exit code.
int run(int argc, char** argv, const std::vector<Option>& options,
        const std::function<int(Parsed&)>& setup);

}  // namespace accel_test
