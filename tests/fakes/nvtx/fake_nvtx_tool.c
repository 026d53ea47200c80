/* A stand-in for an NVTX tool (what Nsight Systems injects): loaded by the
 * NVTX v3 headers' code from NVTX_INJECTION64_PATH, it installs handlers for
 * nvtxRangePushA and nvtxRangePop through the export table NVTX documents
 * (nvtxDetail/nvtxTypes.h) and appends "push NAME" / "pop" lines to the file
 * named by FAKE_NVTX_LOG. Never installed; knows nothing of accel. */
#include <stdio.h>
#include <stdlib.h>

#include <nvtx3/nvToolsExt.h>

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

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char* path = getenv("FAKE_NVTX_LOG");
  if (path == NULL || (g_log = fopen(path, "w")) == NULL) return 0;
  const NvtxExportTableCallbacks* callbacks =
      (const NvtxExportTableCallbacks*)get_export_table(NVTX_ETID_CALLBACKS);
  NvtxFunctionTable table = NULL;
  unsigned int size = 0;
  if (callbacks == NULL ||
      !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) ||
      size <= NVTX_CBID_CORE_RangePop)
    return 0;
  *table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)on_push;
  *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)on_pop;
  return 1;
}
