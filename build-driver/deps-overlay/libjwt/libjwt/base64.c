/*
 * Part of slurm-on-mac (not libjwt): see base64.h. Written from RFC 4648, section 4.
 */
#include <string.h>

#include "base64.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int jwt_Base64encode(char *dst, const char *src, int len)
{
	const unsigned char *s = (const unsigned char *)src;
	char *d = dst;
	int i;

	for (i = 0; i + 2 < len; i += 3) {
		*d++ = alphabet[s[i] >> 2];
		*d++ = alphabet[((s[i] & 3) << 4) | (s[i + 1] >> 4)];
		*d++ = alphabet[((s[i + 1] & 15) << 2) | (s[i + 2] >> 6)];
		*d++ = alphabet[s[i + 2] & 63];
	}
	if (i < len) {
		*d++ = alphabet[s[i] >> 2];
		if (i + 1 < len) {
			*d++ = alphabet[((s[i] & 3) << 4) | (s[i + 1] >> 4)];
			*d++ = alphabet[(s[i + 1] & 15) << 2];
		} else {
			*d++ = alphabet[(s[i] & 3) << 4];
			*d++ = '=';
		}
		*d++ = '=';
	}
	*d++ = '\0';
	return (int)(d - dst);
}

static int value(char c)
{
	const char *p = c ? strchr(alphabet, c) : NULL;

	return p ? (int)(p - alphabet) : -1;
}

int jwt_Base64decode(char *dst, const char *src)
{
	size_t len = strlen(src), i;
	unsigned char *d = (unsigned char *)dst;
	int out = 0;

	if (len == 0 || len % 4)
		return 0;
	for (i = 0; i < len; i += 4) {
		int a = value(src[i]), b = value(src[i + 1]);
		int c = src[i + 2] == '=' ? -2 : value(src[i + 2]);
		int e = src[i + 3] == '=' ? -2 : value(src[i + 3]);
		int last = i + 4 == len;

		if (a < 0 || b < 0 || c == -1 || e == -1 ||
		    (!last && (c < 0 || e < 0)) || (c == -2 && e != -2))
			return 0;
		d[out++] = (unsigned char)((a << 2) | (b >> 4));
		if (c >= 0)
			d[out++] = (unsigned char)(((b & 15) << 4) | (c >> 2));
		if (e >= 0)
			d[out++] = (unsigned char)(((c & 3) << 6) | e);
	}
	return out;
}
