#include "accel_kernels.h"

#include <pthread.h>

#define DECLARE(sym)                    \
  extern const unsigned char sym[];     \
  extern const size_t sym##_size;

DECLARE(accel_kernels_opencl_c)
DECLARE(accel_kernels_sim_host)
#ifdef ACCEL_KERNELS_HAVE_PTX
DECLARE(accel_kernels_ptx)
#endif
#ifdef ACCEL_KERNELS_HAVE_AMD
DECLARE(accel_kernels_amd)
#endif
#ifdef ACCEL_KERNELS_HAVE_SPIRV
DECLARE(accel_kernels_spirv)
#endif

static accel_module_image_t g_images[5];
static size_t g_count;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void fill_once(void) {
  size_t n = 0;
#ifdef ACCEL_KERNELS_HAVE_PTX
  g_images[n++] = (accel_module_image_t){ACCEL_MODULE_FORMAT_PTX, accel_kernels_ptx,
                                         accel_kernels_ptx_size};
#endif
#ifdef ACCEL_KERNELS_HAVE_AMD
  g_images[n++] = (accel_module_image_t){ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT, accel_kernels_amd,
                                         accel_kernels_amd_size};
#endif
#ifdef ACCEL_KERNELS_HAVE_SPIRV
  g_images[n++] = (accel_module_image_t){ACCEL_MODULE_FORMAT_SPIRV, accel_kernels_spirv,
                                         accel_kernels_spirv_size};
#endif
  g_images[n++] = (accel_module_image_t){ACCEL_MODULE_FORMAT_OPENCL_C, accel_kernels_opencl_c,
                                         accel_kernels_opencl_c_size};
  g_images[n++] = (accel_module_image_t){ACCEL_MODULE_FORMAT_SIM_HOST, accel_kernels_sim_host,
                                         accel_kernels_sim_host_size};
  g_count = n;
}

static void fill(void) { pthread_once(&g_once, fill_once); }

size_t accel_kernels_images(accel_module_image_t* out, size_t capacity) {
  fill();
  for (size_t i = 0; i < g_count && i < capacity; ++i) out[i] = g_images[i];
  return g_count;
}

const accel_module_image_t* accel_kernels_image(accel_module_format_t format) {
  fill();
  for (size_t i = 0; i < g_count; ++i)
    if (g_images[i].format == format) return &g_images[i];
  return NULL;
}
