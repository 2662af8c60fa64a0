/* Darwin personality: macOS's <fcntl.h> has F_GETPATH (50: the path of the file behind a
 * descriptor, into a MAXPATHLEN buffer), which patch 0020's fd_resolve_path() uses on
 * __APPLE__. Linux has no command 50; the shim's fcntl answers it from /proc/self/fd
 * (shim/src/emulate/fcntl.rs) and passes every other command to glibc. */
#include_next <fcntl.h>
#ifndef F_GETPATH
#define F_GETPATH 50
#endif
