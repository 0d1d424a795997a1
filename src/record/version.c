/* version.c - tprof_version: the release of the library as built, for programs that may run
 * against another libtprof.so than the header they were compiled with. */
#include "tprof.h"

const char *tprof_version(void) {
    return TPROF_VERSION;
}
