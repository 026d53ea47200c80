// OpenCL status codes: their names and meanings, the accel status each maps
// to, and vendor_fail, through which every failed OpenCL call is reported.
//
// OpenCL has no call that describes a status code (no clGetErrorString), so
// the texts below are this backend's short summaries of the specification.
#include "backend.hpp"

namespace accel::opencl {
namespace {

// OpenCL 3.0 core (cl.h), then the registered extension codes (cl_ext.h,
// cl_gl.h, cl_d3d*.h, cl_dx9*.h, cl_egl.h, cl_va_api*.h). Where Khronos and
// a vendor share a value the KHR name is given. Looked up only on error paths.
constexpr accel::plugin::VendorCode kCodes[] = {
    {0, "CL_SUCCESS", "success"},
    {-1, "CL_DEVICE_NOT_FOUND", "no device of the requested type"},
    {-2, "CL_DEVICE_NOT_AVAILABLE", "the device is not available"},
    {-3, "CL_COMPILER_NOT_AVAILABLE", "no compiler for the device"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE", "device memory could not be allocated"},
    {-5, "CL_OUT_OF_RESOURCES", "the device ran out of resources"},
    {-6, "CL_OUT_OF_HOST_MEMORY", "the driver ran out of host memory"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE", "no profiling information for the command"},
    {-8, "CL_MEM_COPY_OVERLAP", "source and destination of the copy overlap"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH", "the images have different formats"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED", "image format not supported"},
    {-11, "CL_BUILD_PROGRAM_FAILURE", "building the program failed"},
    {-12, "CL_MAP_FAILURE", "mapping the memory object failed"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET", "sub-buffer offset is misaligned for the device"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST", "an event in the wait list failed"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE", "compiling the program failed"},
    {-16, "CL_LINKER_NOT_AVAILABLE", "no linker for the device"},
    {-17, "CL_LINK_PROGRAM_FAILURE", "linking the program failed"},
    {-18, "CL_DEVICE_PARTITION_FAILED", "the device could not be partitioned"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE", "no kernel argument information"},
    {-30, "CL_INVALID_VALUE", "an argument has an invalid value"},
    {-31, "CL_INVALID_DEVICE_TYPE", "invalid device type"},
    {-32, "CL_INVALID_PLATFORM", "invalid platform"},
    {-33, "CL_INVALID_DEVICE", "invalid device"},
    {-34, "CL_INVALID_CONTEXT", "invalid context"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES", "the device does not support these queue properties"},
    {-36, "CL_INVALID_COMMAND_QUEUE", "invalid command queue"},
    {-37, "CL_INVALID_HOST_PTR", "invalid host pointer"},
    {-38, "CL_INVALID_MEM_OBJECT", "invalid memory object"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR", "invalid image format descriptor"},
    {-40, "CL_INVALID_IMAGE_SIZE", "invalid image size"},
    {-41, "CL_INVALID_SAMPLER", "invalid sampler"},
    {-42, "CL_INVALID_BINARY", "invalid program binary"},
    {-43, "CL_INVALID_BUILD_OPTIONS", "invalid build options"},
    {-44, "CL_INVALID_PROGRAM", "invalid program"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE", "the program has no executable for the device"},
    {-46, "CL_INVALID_KERNEL_NAME", "no kernel of that name in the program"},
    {-47, "CL_INVALID_KERNEL_DEFINITION", "the kernel differs between devices"},
    {-48, "CL_INVALID_KERNEL", "invalid kernel"},
    {-49, "CL_INVALID_ARG_INDEX", "invalid kernel argument index"},
    {-50, "CL_INVALID_ARG_VALUE", "invalid kernel argument value"},
    {-51, "CL_INVALID_ARG_SIZE", "invalid kernel argument size"},
    {-52, "CL_INVALID_KERNEL_ARGS", "kernel arguments not set"},
    {-53, "CL_INVALID_WORK_DIMENSION", "invalid work dimension"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE", "invalid work-group size"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE", "invalid work-item size"},
    {-56, "CL_INVALID_GLOBAL_OFFSET", "invalid global offset"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST", "invalid event wait list"},
    {-58, "CL_INVALID_EVENT", "invalid event"},
    {-59, "CL_INVALID_OPERATION", "operation not valid here"},
    {-60, "CL_INVALID_GL_OBJECT", "invalid OpenGL object"},
    {-61, "CL_INVALID_BUFFER_SIZE", "invalid buffer size"},
    {-62, "CL_INVALID_MIP_LEVEL", "invalid mip level"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE", "invalid global work size"},
    {-64, "CL_INVALID_PROPERTY", "invalid property"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR", "invalid image descriptor"},
    {-66, "CL_INVALID_COMPILER_OPTIONS", "invalid compiler options"},
    {-67, "CL_INVALID_LINKER_OPTIONS", "invalid linker options"},
    {-68, "CL_INVALID_DEVICE_PARTITION_COUNT", "invalid device partition count"},
    {-69, "CL_INVALID_PIPE_SIZE", "invalid pipe size"},
    {-70, "CL_INVALID_DEVICE_QUEUE", "invalid device queue"},
    {-71, "CL_INVALID_SPEC_ID", "invalid specialization constant id"},
    {-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED", "a size exceeds what the device allows"},
    {-1000, "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR", "invalid OpenGL share group"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR", "the ICD loader found no platform (cl_khr_icd)"},
    {-1002, "CL_INVALID_D3D10_DEVICE_KHR", "invalid Direct3D 10 device"},
    {-1003, "CL_INVALID_D3D10_RESOURCE_KHR", "invalid Direct3D 10 resource"},
    {-1004, "CL_D3D10_RESOURCE_ALREADY_ACQUIRED_KHR", "Direct3D 10 resource already acquired"},
    {-1005, "CL_D3D10_RESOURCE_NOT_ACQUIRED_KHR", "Direct3D 10 resource not acquired"},
    {-1006, "CL_INVALID_D3D11_DEVICE_KHR", "invalid Direct3D 11 device"},
    {-1007, "CL_INVALID_D3D11_RESOURCE_KHR", "invalid Direct3D 11 resource"},
    {-1008, "CL_D3D11_RESOURCE_ALREADY_ACQUIRED_KHR", "Direct3D 11 resource already acquired"},
    {-1009, "CL_D3D11_RESOURCE_NOT_ACQUIRED_KHR", "Direct3D 11 resource not acquired"},
    {-1010, "CL_INVALID_DX9_MEDIA_ADAPTER_KHR", "invalid DirectX 9 media adapter"},
    {-1011, "CL_INVALID_DX9_MEDIA_SURFACE_KHR", "invalid DirectX 9 media surface"},
    {-1012, "CL_DX9_MEDIA_SURFACE_ALREADY_ACQUIRED_KHR", "DirectX 9 surface already acquired"},
    {-1013, "CL_DX9_MEDIA_SURFACE_NOT_ACQUIRED_KHR", "DirectX 9 media surface not acquired"},
    {-1057, "CL_DEVICE_PARTITION_FAILED_EXT", "the device could not be partitioned"},
    {-1058, "CL_INVALID_PARTITION_COUNT_EXT", "invalid partition count"},
    {-1059, "CL_INVALID_PARTITION_NAME_EXT", "invalid partition name"},
    {-1092, "CL_EGL_RESOURCE_NOT_ACQUIRED_KHR", "EGL resource not acquired"},
    {-1093, "CL_INVALID_EGL_OBJECT_KHR", "invalid EGL object"},
    {-1094, "CL_INVALID_ACCELERATOR_INTEL", "invalid accelerator object"},
    {-1095, "CL_INVALID_ACCELERATOR_TYPE_INTEL", "invalid accelerator type"},
    {-1096, "CL_INVALID_ACCELERATOR_DESCRIPTOR_INTEL", "invalid accelerator descriptor"},
    {-1097, "CL_ACCELERATOR_TYPE_NOT_SUPPORTED_INTEL", "accelerator type not supported"},
    {-1098, "CL_INVALID_VA_API_MEDIA_ADAPTER_INTEL", "invalid VA-API media adapter"},
    {-1099, "CL_INVALID_VA_API_MEDIA_SURFACE_INTEL", "invalid VA-API media surface"},
    {-1100, "CL_VA_API_MEDIA_SURFACE_ALREADY_ACQUIRED_INTEL", "VA-API surface already acquired"},
    {-1101, "CL_VA_API_MEDIA_SURFACE_NOT_ACQUIRED_INTEL", "VA-API media surface not acquired"},
    {-1108, "CL_COMMAND_TERMINATED_ITSELF_WITH_FAILURE_ARM", "the command ended with a failure"},
    {-1121, "CL_CONTEXT_TERMINATED_KHR", "the context was terminated"},
    {-1138, "CL_INVALID_COMMAND_BUFFER_KHR", "invalid command buffer"},
    {-1139, "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR", "invalid sync point wait list"},
    {-1140, "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR", "queue incompatible with the command buffer"},
    {-1141, "CL_INVALID_MUTABLE_COMMAND_KHR", "invalid mutable command"},
    {-1142, "CL_INVALID_SEMAPHORE_KHR", "invalid semaphore"},
};

const accel::plugin::VendorCode* find(cl_int code) noexcept {
  return accel::plugin::find_vendor_code(kCodes, code);
}

}  // namespace

const char* cl_error_name(cl_int code) noexcept {
  const accel::plugin::VendorCode* c = find(code);
  return c != nullptr ? c->name : "CL_UNKNOWN_ERROR";
}

const char* cl_error_text(cl_int code) noexcept {
  const accel::plugin::VendorCode* c = find(code);
  return c != nullptr ? c->text : "a code this backend does not know (a vendor extension?)";
}

accel_status_t status_of(cl_int code) noexcept {
  if (code == CL_SUCCESS) return ACCEL_SUCCESS;
  if (code == CL_OUT_OF_HOST_MEMORY || code == CL_MEM_OBJECT_ALLOCATION_FAILURE)
    return ACCEL_ERROR_OUT_OF_MEMORY;
  return ACCEL_ERROR_BACKEND_FAILURE;
}

accel_status_t vendor_fail(const char* call, cl_int code) noexcept {
  return accel::plugin::vendor_fail(status_of(code), call, cl_error_name(code), code,
                                    cl_error_text(code));
}

void log_vendor_failure(accel_log_level_t level, const char* call, cl_int code,
                        const char* context) noexcept {
  accel::plugin::log(level, "%s failed: %s (%d): %s%s%s", call, cl_error_name(code),
                     static_cast<int>(code), cl_error_text(code), context ? " " : "",
                     context ? context : "");
}

}  // namespace accel::opencl
