/* A stand-in for an NVTX tool (what Nsight Systems injects): loaded by the
 * NVTX v3 headers' code from NVTX_INJECTION64_PATH, it installs handlers for
 * nvtxRangePushA, nvtxRangePop and nvtxNameCuStreamA through the export
 * table NVTX documents (nvtxDetail/nvtxTypes.h) and appends "push NAME" /
 * "pop" / "name-stream HANDLE NAME" lines to the file named by
 * FAKE_NVTX_LOG. Every library that includes the NVTX headers initialises
 * its own copy of them and so calls InitializeInjectionNvtx2 once itself:
 * the log is opened at the first call only. Never installed; knows nothing
 * of accel. */
#include <stdio.h>
#include <stdlib.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCuda.h>

static FILE* g_log;

static int NVTX_API on_push(const char* message) {
  if (g_log != NULL) {
    fprintf(g_log, "push %s\n", message);
    fflush(g_log);
  }
  return 0;
}

static int NVTX_API on_pop(void) {
  if (g_log != NULL) {
    fputs("pop\n", g_log);
    fflush(g_log);
  }
  return 0;
}

static void NVTX_API on_name_stream(CUstream stream, const char* name) {
  if (g_log != NULL) {
    fprintf(g_log, "name-stream %p %s\n", (void*)stream, name);
    fflush(g_log);
  }
}

/* The slot of `id` in module `module`'s table, or NULL. */
static NvtxFunctionPointer* slot(const NvtxExportTableCallbacks* callbacks,
                                 NvtxCallbackModule module, unsigned int id) {
  NvtxFunctionTable table = NULL;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(module, &table, &size) || size <= id) return NULL;
  return table[id];
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char* path = getenv("FAKE_NVTX_LOG");
  if (g_log == NULL && (path == NULL || (g_log = fopen(path, "w")) == NULL)) return 0;
  const NvtxExportTableCallbacks* callbacks =
      (const NvtxExportTableCallbacks*)get_export_table(NVTX_ETID_CALLBACKS);
  if (callbacks == NULL) return 0;
  NvtxFunctionPointer* push = slot(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA);
  NvtxFunctionPointer* pop = slot(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop);
  NvtxFunctionPointer* name = slot(callbacks, NVTX_CB_MODULE_CUDA, NVTX_CBID_CUDA_NameCuStreamA);
  if (push == NULL || pop == NULL || name == NULL) return 0;
  *push = (NvtxFunctionPointer)on_push;
  *pop = (NvtxFunctionPointer)on_pop;
  *name = (NvtxFunctionPointer)on_name_stream;
  return 1;
}
