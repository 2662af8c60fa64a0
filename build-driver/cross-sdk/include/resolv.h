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
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bounds the resolver state is sized with (BIND 9's values, which macOS keeps). */
#define MAXNS 3          /* name servers tracked */
#define MAXDNSRCH 6      /* entries of the search list */
#define MAXRESOLVSORT 10 /* address/mask pairs of the sort list */

/* One resolver context: res_ninit() fills it, the other res_n*() calls read it. Callers
 * allocate it and may adjust the documented options between res_ninit() and the queries
 * (Slurm 26.11 sets ndots). The members up to sort_list and res_h_errno are BIND 9's
 * documented ones; the rest belongs to libresolv and is declared only for its size and
 * alignment. The layout is checked against the macOS 12.0 SDK for arm64 and x86_64 by the
 * cross_sdk layout test (build-driver/src/cross/sdk_layout.rs; figures in the README). */
struct __res_state {
	int retrans;                           /* seconds before a query is retransmitted */
	int retry;                             /* attempts per name server */
	unsigned long options;                 /* RES_* option bits */
	int nscount;                           /* used entries of nsaddr_list */
	struct sockaddr_in nsaddr_list[MAXNS]; /* name servers */
	unsigned short id;                     /* id of the last query sent */
	char *dnsrch[MAXDNSRCH + 1];           /* search list, NULL-terminated */
	char defdname[256];                    /* default domain */
	unsigned long pfcode;                  /* RES_PRF_* flags of the debugging printer */
	unsigned ndots : 4;                    /* dots in a name that make it tried as absolute first */
	unsigned nsort : 4;                    /* used entries of sort_list */
	char _reserved[3];
	struct {
		struct in_addr addr;
		uint32_t mask;
	} sort_list[MAXRESOLVSORT];
	void *_hooks[2];                       /* libresolv's query and response hooks */
	int res_h_errno;                       /* h_errno of the last call on this context */
	int _private[3];
	union {
		char _bytes[40];
		void *_align;
	} _ext;
};

#if defined(__LP64__)
_Static_assert(sizeof(struct __res_state) == 552,
	       "struct __res_state must have the macOS SDK's LP64 size");
#endif
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
