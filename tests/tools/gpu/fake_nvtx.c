/* fake_nvtx.c - an NVTX injection library (what Nsight Systems loads through
 * NVTX_INJECTION64_PATH) that appends "push <name>" and "pop" lines to $FAKE_NVTX_LOG. */
#include "fake_log.h"

#include <nvtx3/nvToolsExt.h>

#define FAKE_API __attribute__((visibility("default")))

static int NVTX_API push_a(const char *name) {
    fake_log("FAKE_NVTX_LOG", "push", name);
    return 0;
}

static int NVTX_API pop(void) {
    fake_log("FAKE_NVTX_LOG", "pop", NULL);
    return 0;
}

/* The tool's side of NVTX's injection protocol: fill the core module's function slots. */
FAKE_API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *)get_export_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) ||
        size <= NVTX_CBID_CORE_RangePop)
        return 0;
    *table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)push_a;
    *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)pop;
    return 1;
}
