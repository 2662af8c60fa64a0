/*****************************************************************************\
 *  apple_iokit.c - Apple GPUs as IOKit's registry describes them
 *****************************************************************************
 *  Copyright (C) slurm-on-mac developers.
 *
 *  This file is part of Slurm, a resource management program, and is
 *  distributed under the terms of the GNU General Public License, version 2
 *  or (at your option) any later version, as Slurm is (see COPYING).
\*****************************************************************************/

/*
 * An Apple GPU is an IOKit service of class AGXAccelerator (the driver's own
 * class, e.g. AGXAcceleratorG16X, is a subclass; IOAccelerator is its
 * superclass). Its registry properties include "model" (a CFString such as
 * "Apple M4 Max") and "gpu-core-count" (a CFNumber), the values PyTorch's
 * MPS backend and system tools read the same way.
 *
 * IOKit rules followed (IOKitLib.h): IOServiceGetMatchingServices() always
 * consumes the matching dictionary; on success the iterator may be
 * IO_OBJECT_NULL when nothing matched; every object returned is released
 * with IOObjectRelease(), every CF object created with CFRelease(), which
 * must never be given NULL (CoreFoundation halts the process).
 */

#include <string.h>

#include <CoreFoundation/CoreFoundation.h>
#include <IOKit/IOKitLib.h>

#include "apple_iokit.h"

/* The property `name` of `entry` (a new reference), or NULL. */
static CFTypeRef _property(io_registry_entry_t entry, const char *name)
{
	CFStringRef key;
	CFTypeRef value;

	/* NULL is kCFAllocatorDefault ("a synonym for NULL", CFBase.h). */
	key = CFStringCreateWithCString(NULL, name, kCFStringEncodingUTF8);
	if (!key)
		return NULL;
	value = IORegistryEntryCreateCFProperty(entry, key, NULL, 0);
	CFRelease(key);
	return value;
}

static void _string_property(io_registry_entry_t entry, const char *name,
			     char *buf, size_t size)
{
	CFTypeRef value = _property(entry, name);

	buf[0] = '\0';
	if (!value)
		return;
	if ((CFGetTypeID(value) != CFStringGetTypeID()) ||
	    !CFStringGetCString((CFStringRef) value, buf, (CFIndex) size,
				kCFStringEncodingUTF8))
		buf[0] = '\0';
	CFRelease(value);
}

static int64_t _number_property(io_registry_entry_t entry, const char *name)
{
	CFTypeRef value = _property(entry, name);
	int64_t n = -1;

	if (!value)
		return -1;
	if ((CFGetTypeID(value) != CFNumberGetTypeID()) ||
	    !CFNumberGetValue((CFNumberRef) value, kCFNumberSInt64Type, &n))
		n = -1;
	CFRelease(value);
	return n;
}

extern int apple_gpu_probe(apple_gpu_t *gpus, int max, int *kr)
{
	CFMutableDictionaryRef matching;
	io_iterator_t iter = IO_OBJECT_NULL;
	io_object_t service;
	kern_return_t rc;
	int found = 0;

	*kr = KERN_SUCCESS;
	if (!(matching = IOServiceMatching("AGXAccelerator"))) {
		*kr = -1;
		return -1;
	}
	/* MACH_PORT_NULL is kIOMainPortDefault (IOKitLib.h). */
	rc = IOServiceGetMatchingServices(MACH_PORT_NULL, matching, &iter);
	if (rc != KERN_SUCCESS) {
		*kr = rc;
		return -1;
	}
	if (iter == IO_OBJECT_NULL)
		return 0;
	while ((service = IOIteratorNext(iter)) != IO_OBJECT_NULL) {
		if (found < max) {
			_string_property(service, "model", gpus[found].model,
					 sizeof(gpus[found].model));
			gpus[found].cores = _number_property(service,
							     "gpu-core-count");
		}
		found++;
		IOObjectRelease(service);
	}
	IOObjectRelease(iter);
	return found;
}
