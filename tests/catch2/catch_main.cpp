// The plain main() for test programs without options of their own
// (catch2_main_dep). It makes no accel call, so a test case can still be the
// process's very first one.
#include "runner.hpp"

int main(int argc, char** argv) { return accel_test::run(argc, argv, {}, nullptr); }
