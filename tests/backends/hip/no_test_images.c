/* The code objects tests/backends/hip/meson.build makes with hipcc (another
 * ISA, an offload bundle), empty when the build has no hipcc: the tests that
 * need them say they are skipped. */
#include <stddef.h>

const unsigned char hip_test_gfx1030[1] = {0};
const size_t hip_test_gfx1030_size = 0;
const unsigned char hip_test_bundle[1] = {0};
const size_t hip_test_bundle_size = 0;
