/*
 * Stand-in for macOS's <CoreFoundation/CoreFoundation.h>: the part an IOKit user reads
 * registry properties with (gpu/apple, patch 0050). This project's own declarations, written
 * from the documented API (CF-1153.18 CFBase.h, CFString.h, CFNumber.h, CFDictionary.h):
 * opaque object types, the same names, types and constant values as the SDK, nothing else.
 *
 * Used twice: in the Linux darwin personality (on the include path with the other stand-ins
 * here; the shim answers the calls, shim/src/emulate/corefoundation.rs, through the
 * `#pragma redefine_extname` rows of slurm_shim.h), and by the zig Mach-O lane, which
 * ships no Apple frameworks (build-driver/cross-sdk/Frameworks/CoreFoundation.framework
 * links here; the calls bind to its CoreFoundation.tbd). A real Mac uses its SDK.
 */
#ifndef SLURM_SHIM_EMULATE_COREFOUNDATION_H
#define SLURM_SHIM_EMULATE_COREFOUNDATION_H

/* The SDK's header includes these too (NULL, the fixed-width types). */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef unsigned char Boolean;
typedef signed long CFIndex;      /* LP64 */
typedef unsigned long CFTypeID;
typedef const void *CFTypeRef;
typedef uint32_t CFStringEncoding;
typedef CFIndex CFNumberType;

typedef const struct __CFAllocator *CFAllocatorRef;
typedef const struct __CFString *CFStringRef;
typedef const struct __CFNumber *CFNumberRef;
typedef const struct __CFDictionary *CFDictionaryRef;
typedef struct __CFDictionary *CFMutableDictionaryRef;

/* CFString.h: CFStringBuiltInEncodings (the two the emulation converts). */
enum {
	kCFStringEncodingASCII = 0x0600,
	kCFStringEncodingUTF8 = 0x08000100
};

/* CFNumber.h: CFNumberType. */
enum {
	kCFNumberSInt8Type = 1,
	kCFNumberSInt16Type = 2,
	kCFNumberSInt32Type = 3,
	kCFNumberSInt64Type = 4,
	kCFNumberFloat32Type = 5,
	kCFNumberFloat64Type = 6,
	kCFNumberCharType = 7,
	kCFNumberShortType = 8,
	kCFNumberIntType = 9,
	kCFNumberLongType = 10,
	kCFNumberLongLongType = 11,
	kCFNumberFloatType = 12,
	kCFNumberDoubleType = 13,
	kCFNumberCFIndexType = 14,
	kCFNumberNSIntegerType = 15,
	kCFNumberCGFloatType = 16
};

/* An allocator argument of NULL is kCFAllocatorDefault (CFBase.h). */

CFTypeID CFGetTypeID(CFTypeRef cf);
void CFRelease(CFTypeRef cf);

CFTypeID CFStringGetTypeID(void);
CFStringRef CFStringCreateWithCString(CFAllocatorRef alloc, const char *cStr,
				      CFStringEncoding encoding);
Boolean CFStringGetCString(CFStringRef theString, char *buffer, CFIndex bufferSize,
			   CFStringEncoding encoding);

CFTypeID CFNumberGetTypeID(void);
Boolean CFNumberGetValue(CFNumberRef number, CFNumberType theType, void *valuePtr);

#ifdef __cplusplus
}
#endif

#endif /* SLURM_SHIM_EMULATE_COREFOUNDATION_H */
