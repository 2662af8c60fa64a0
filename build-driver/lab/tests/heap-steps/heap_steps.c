/* What slurmctld's heap does under glibc's malloc, in miniature: a buffer that grows from
 * 1 to 8 MiB (a state save's pack buffer) is allocated, touched and freed, again and again,
 * while small long-lived objects are allocated beside it. Prints the resident set before
 * and after, in kB: "<before> <after>". With glibc's dynamic mmap threshold the buffers
 * move from mmap into the heap, and the heap keeps their pages below the small objects;
 * with the threshold fixed (MALLOC_MMAP_THRESHOLD_) they stay mmapped and are returned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rss_kb(void)
{
	long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2)
		exit(2);
	fclose(f);
	return resident * 4;
}

int main(void)
{
	static void *small[3000];
	volatile char *sink;
	long before = rss_kb();

	for (int round = 0; round < 30; round++) {
		size_t size = (size_t) (1 + round % 8) << 20;
		char *buf = malloc(size);

		if (!buf)
			return 2;
		memset(buf, 1, size);
		sink = buf;
		for (int i = 0; i < 100; i++) {
			small[round * 100 + i] = malloc(200);
			if (!small[round * 100 + i])
				return 2;
			memset(small[round * 100 + i], 2, 200);
		}
		free((void *) sink);
	}
	printf("%ld %ld\n", before, rss_kb());
	return 0;
}
