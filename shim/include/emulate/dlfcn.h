/* Darwin personality: macOS's <dlfcn.h> also has RTLD_MAIN_ONLY (((void *) -5), "search
 * main executable only", SDK dlfcn.h), which patch 0019 (26.11) uses to read a daemon's
 * strong slurm_daemon. glibc has no such handle; the shim's dlsym answers it
 * (shim/src/emulate/dlsym.rs). */
#include_next <dlfcn.h>
#ifndef RTLD_MAIN_ONLY
#define RTLD_MAIN_ONLY ((void *) -5)
#endif
