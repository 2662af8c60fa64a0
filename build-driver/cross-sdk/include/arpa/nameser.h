/* arpa/nameser.h: minimal declarations for the zig macOS cross lane (slurm-on-mac).
 * Written from the documented BIND ns_parse interface (message handle, resource record,
 * section numbers); see build-driver/cross-sdk/README.md. The functions are exported by
 * macOS's libresolv with a res_9_ prefix. */
#ifndef SLURM_ON_MAC_CROSS_ARPA_NAMESER_H
#define SLURM_ON_MAC_CROSS_ARPA_NAMESER_H

#include <sys/types.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NS_PACKETSZ 512   /* maximum UDP message size */
#define NS_MAXDNAME 1025  /* maximum presentation-format domain name */
#define NS_INT32SZ 4
#define NS_INT16SZ 2
#define NS_INT8SZ 1

/* Message sections (RFC 1035 section 4.1). */
typedef enum __ns_sect {
	ns_s_qd = 0, ns_s_zn = 0,
	ns_s_an = 1, ns_s_pr = 1,
	ns_s_ns = 2, ns_s_ud = 2,
	ns_s_ar = 3,
	ns_s_max = 4
} ns_sect;

/* A parsed message: filled by ns_initparse(), read through the ns_msg_* macros. */
typedef struct __ns_msg {
	const u_char *_msg;
	const u_char *_eom;
	uint16_t _id;
	uint16_t _flags;
	uint16_t _counts[ns_s_max];
	const u_char *_sections[ns_s_max];
	ns_sect _sect;
	int _rrnum;
	const u_char *_msg_ptr;
} ns_msg;

/* One resource record: filled by ns_parserr(). */
typedef struct __ns_rr {
	char name[NS_MAXDNAME];
	uint16_t type;
	uint16_t rr_class;
	uint32_t ttl;
	uint16_t rdlength;
	const u_char *rdata;
} ns_rr;

#define ns_msg_id(h) ((h)._id + 0)
#define ns_msg_base(h) ((h)._msg + 0)
#define ns_msg_end(h) ((h)._eom + 0)
#define ns_msg_size(h) ((h)._eom - (h)._msg)
#define ns_msg_count(h, s) ((h)._counts[(s)] + 0)

#define ns_rr_name(rr) (((rr).name[0] != '\0') ? (rr).name : ".")
#define ns_rr_type(rr) ((rr).type + 0)
#define ns_rr_class(rr) ((rr).rr_class + 0)
#define ns_rr_ttl(rr) ((rr).ttl + 0)
#define ns_rr_rdlen(rr) ((rr).rdlength + 0)
#define ns_rr_rdata(rr) ((rr).rdata + 0)

int res_9_ns_initparse(const u_char *msg, int msglen, ns_msg *handle);
int res_9_ns_parserr(ns_msg *handle, ns_sect section, int rrnum, ns_rr *rr);
u_int res_9_ns_get16(const u_char *src);
u_long res_9_ns_get32(const u_char *src);

#define ns_initparse res_9_ns_initparse
#define ns_parserr res_9_ns_parserr
#define ns_get16 res_9_ns_get16
#define ns_get32 res_9_ns_get32

#ifdef __cplusplus
}
#endif

#endif
