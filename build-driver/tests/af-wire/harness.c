/*
 * Harness for the af_wire test (build-driver/src/patches/af_wire_tests.rs).
 *
 * The test extracts slurm_pack_addr() and slurm_unpack_addr_no_alloc() (and
 * whatever sits between them and the function before) from a Slurm
 * src/common/slurm_protocol_socket.c into extracted.c, and compiles this
 * file twice: as "Linux" (AF_INET6 10, glibc's value) and as "macOS"
 * (-D__APPLE__ -DFORCE_AF_INET6=30: macOS's value, forced on this Linux
 * machine). The buffer functions below stand in for Slurm's pack.c with
 * the same byte order (network order, length-prefixed memory).
 *
 *   harness pack ADDR PORT      writes the packed address to stdout
 *   harness unpack              reads a packed address from stdin and prints
 *                               "<family name> <address> <port>"
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#ifdef FORCE_AF_INET6
#undef AF_INET6
#define AF_INET6 FORCE_AF_INET6
#endif

#define SLURM_SUCCESS 0
#define SLURM_ERROR -1

typedef struct sockaddr_storage slurm_addr_t;

typedef struct {
	unsigned char data[512];
	uint32_t size;
	uint32_t processed;
} buf_t;

static void pack16(uint16_t v, buf_t *b)
{
	uint16_t n = htons(v);
	memcpy(b->data + b->size, &n, 2);
	b->size += 2;
}

static void pack32(uint32_t v, buf_t *b)
{
	uint32_t n = htonl(v);
	memcpy(b->data + b->size, &n, 4);
	b->size += 4;
}

static void packmem(void *p, uint32_t len, buf_t *b)
{
	pack32(len, b);
	memcpy(b->data + b->size, p, len);
	b->size += len;
}

/* The next n bytes of b, copied to dst; -1 (nothing taken) past its end. */
static int take(void *dst, uint32_t n, buf_t *b)
{
	if (b->processed + n > b->size)
		return -1;
	memcpy(dst, b->data + b->processed, n);
	b->processed += n;
	return 0;
}

static int unpack16(uint16_t *v, buf_t *b)
{
	uint16_t n = 0;
	int rc = take(&n, sizeof(n), b);

	*v = ntohs(n);
	return rc;
}

static int unpack32(uint32_t *v, buf_t *b)
{
	uint32_t n = 0;
	int rc = take(&n, sizeof(n), b);

	*v = ntohl(n);
	return rc;
}

static int unpackmem_ptr(char **p, uint32_t *len, buf_t *b)
{
	if (unpack32(len, b) || (b->processed + *len > b->size))
		return -1;
	*p = (char *) b->data + b->processed;
	b->processed += *len;
	return 0;
}

#define safe_unpack16(v, b) do { if (unpack16((uint16_t *) (v), b)) goto unpack_error; } while (0)
#define safe_unpack32(v, b) do { if (unpack32((uint32_t *) (v), b)) goto unpack_error; } while (0)
#define safe_unpackmem_ptr(p, l, b) do { if (unpackmem_ptr(p, l, b)) goto unpack_error; } while (0)
/* what the extracted code may log or assert */
#define log_flag(...) do { } while (0)
#define xassert(x) do { } while (0)

#include "extracted.c"

int main(int argc, char **argv)
{
	buf_t b = { .size = 0, .processed = 0 };
	slurm_addr_t addr;
	char text[INET6_ADDRSTRLEN] = "";

	memset(&addr, 0, sizeof(addr));
	if (argc == 4 && !strcmp(argv[1], "pack")) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &addr;
		struct sockaddr_in *in = (struct sockaddr_in *) &addr;
		if (inet_pton(10, argv[2], &in6->sin6_addr) == 1) {
			addr.ss_family = AF_INET6; /* this build's value */
			in6->sin6_port = htons(atoi(argv[3]));
		} else if (inet_pton(AF_INET, argv[2], &in->sin_addr) == 1) {
			addr.ss_family = AF_INET;
			in->sin_port = htons(atoi(argv[3]));
		} else {
			fprintf(stderr, "not an address: %s\n", argv[2]);
			return 2;
		}
		slurm_pack_addr(&addr, &b);
		fwrite(b.data, 1, b.size, stdout);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "unpack")) {
		b.size = fread(b.data, 1, sizeof(b.data), stdin);
		if (slurm_unpack_addr_no_alloc(&addr, &b) != SLURM_SUCCESS) {
			printf("unpack-error\n");
			return 0;
		}
		if (addr.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &addr;
			inet_ntop(10, &in6->sin6_addr, text, sizeof(text));
			printf("inet6 %s %u\n", text, ntohs(in6->sin6_port));
		} else if (addr.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *) &addr;
			inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
			printf("inet %s %u\n", text, ntohs(in->sin_port));
		} else {
			printf("family-%u\n", addr.ss_family);
		}
		return 0;
	}
	fprintf(stderr, "usage: harness pack ADDR PORT | harness unpack\n");
	return 2;
}
