/*
 * Part of slurm-on-mac (not libjwt): the base64 routines libjwt 1.x's jwt.c expects.
 * Debian's libjwt 1.17.2 orig tarball leaves out upstream's base64.c/base64.h, so the
 * build driver (cargo xtask deps) adds this implementation, written from RFC 4648.
 */
#ifndef SLURM_ON_MAC_JWT_BASE64_H
#define SLURM_ON_MAC_JWT_BASE64_H

/* Encodes len bytes of src as padded base64 into dst (room for 4 * ((len + 2) / 3) + 1
 * bytes), NUL-terminated. Returns the number of characters written, NUL included. */
int jwt_Base64encode(char *dst, const char *src, int len);

/* Decodes the NUL-terminated padded base64 text src into dst (room for 3 * strlen(src) / 4
 * bytes). Returns the number of bytes written; 0 if src is empty or not valid base64. */
int jwt_Base64decode(char *dst, const char *src);

#endif
