/* Darwin personality: macOS names struct in6_addr's union __u6_addr (glibc: __in6_u);
 * Slurm's src/common/callerid.c spells s6_addr32 as __u6_addr.__u6_addr32 on __APPLE__. */
#include_next <netinet/in.h>
#ifndef __u6_addr
#define __u6_addr __in6_u
#endif
