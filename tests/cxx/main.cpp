// A second translation unit of accel-cxx-test that includes accel.hpp:
// checks that the header is self-contained and ODR-safe when more than one
// translation unit of a program includes it (Catch2's main comes from
// catch2_main_dep).
#include <accel/accel.hpp>
