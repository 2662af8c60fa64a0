/*
 * Stand-in for macOS's <IOKit/IOKitLib.h>: the registry lookups gpu/apple (patch 0050) makes
 * to find an Apple GPU. This project's own declarations, written from the documented API
 * (IOKitUser-100222.0.4 IOKitLib.h, IOTypes.h): the same names and types as the SDK,
 * nothing else. Used by the Linux darwin personality (answered by
 * shim/src/emulate/iokit.rs) and by the zig Mach-O lane (build-driver/cross-sdk/Frameworks,
 * whose IOKit.tbd the calls bind to), as CoreFoundation/CoreFoundation.h is.
 */
#ifndef SLURM_SHIM_EMULATE_IOKITLIB_H
#define SLURM_SHIM_EMULATE_IOKITLIB_H

#include <stdint.h>

#include <CoreFoundation/CoreFoundation.h>

#if defined(__MACH__)
/* The zig lane: the SDK's Mach types (zig ships these headers). */
#include <mach/kern_return.h>
#include <mach/port.h>
#else
/* The darwin personality on Linux: the SDK's types, by value. */
typedef unsigned int mach_port_t; /* natural_t */
typedef int kern_return_t;
#define MACH_PORT_NULL 0
#define KERN_SUCCESS 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef mach_port_t io_object_t;
typedef io_object_t io_iterator_t;
typedef io_object_t io_registry_entry_t;
typedef io_object_t io_service_t;
typedef uint32_t IOOptionBits;

#define IO_OBJECT_NULL ((io_object_t) 0)

/*
 * The main port: MACH_PORT_NULL means the default (kIOMainPortDefault is "a synonym for
 * NULL", IOKitLib.h), on every macOS release.
 */
CFMutableDictionaryRef IOServiceMatching(const char *name);
kern_return_t IOServiceGetMatchingServices(mach_port_t mainPort, CFDictionaryRef matching,
					   io_iterator_t *existing);
io_object_t IOIteratorNext(io_iterator_t iterator);
CFTypeRef IORegistryEntryCreateCFProperty(io_registry_entry_t entry, CFStringRef key,
					  CFAllocatorRef allocator, IOOptionBits options);
kern_return_t IOObjectRelease(io_object_t object);

#ifdef __cplusplus
}
#endif

#endif /* SLURM_SHIM_EMULATE_IOKITLIB_H */
