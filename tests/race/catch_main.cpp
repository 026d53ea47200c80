// Catch2's main for the reliability suites (race, fork, errors), compiled
// once into a static library: Catch2's implementation is the slowest
// translation unit of the test tree. It makes no accel call, so a test
// case can still be the process's very first one.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
