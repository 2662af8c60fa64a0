/* resolv.h: minimal declarations for the zig macOS cross lane (slurm-on-mac).
 * Written from the documented resolver(3) interface; see build-driver/cross-sdk/README.md.
 * macOS's libresolv exports the BIND 9 functions with a res_9_ prefix; the public names
 * are mapped onto them here, as programs compiled against the SDK expect. */
#ifndef SLURM_ON_MAC_CROSS_RESOLV_H
#define SLURM_ON_MAC_CROSS_RESOLV_H

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/nameser.h>
#include <netdb.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The resolver's state is private to libresolv: callers only allocate it and pass its
 * address. Opaque storage, larger than the library's own structure. */
struct __res_state {
	long long _opaque[128];
};
typedef struct __res_state *res_state;

int res_9_ninit(res_state statp);
int res_9_nsearch(res_state statp, const char *dname, int class_, int type,
		  u_char *answer, int anslen);
int res_9_nquery(res_state statp, const char *dname, int class_, int type,
		 u_char *answer, int anslen);
void res_9_nclose(res_state statp);
int res_9_dn_expand(const u_char *msg, const u_char *eom, const u_char *src,
		    char *dst, int dstsiz);

#define res_ninit res_9_ninit
#define res_nsearch res_9_nsearch
#define res_nquery res_9_nquery
#define res_nclose res_9_nclose
#define dn_expand res_9_dn_expand

#ifdef __cplusplus
}
#endif

#endif
