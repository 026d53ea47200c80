// Entry of accel-cxx-test: Catch2's main plus a check that accel.hpp is
// self-contained and ODR-safe when included by more than one translation unit.
#define CATCH_CONFIG_MAIN
#include <accel/accel.hpp>

#include <catch2/catch.hpp>
