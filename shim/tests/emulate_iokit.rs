//! IOKit and CoreFoundation as gpu/apple calls them (shim/src/emulate/{iokit,corefoundation,
//! mac_hardware}.rs and the stand-ins shim/include/emulate/IOKit/IOKitLib.h,
//! CoreFoundation/CoreFoundation.h): a darwin-compiled C program that looks up the
//! AGXAccelerator services as patch 0050's apple_iokit.c does sees the hardware file's GPU,
//! nothing without one, an error for a broken file, and halts as CoreFoundation does on
//! `CFRelease(NULL)`. Every object it was given is released at the end.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use std::path::PathBuf;

/// The lookup of apple_iokit.c, then a leak check through the shim's own counters.
const PROBE: &str = r#"#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <CoreFoundation/CoreFoundation.h>
#include <IOKit/IOKitLib.h>

static CFTypeRef prop(io_registry_entry_t e, const char *name)
{
	CFStringRef key = CFStringCreateWithCString(NULL, name, kCFStringEncodingUTF8);
	CFTypeRef v;
	if (!key)
		return NULL;
	v = IORegistryEntryCreateCFProperty(e, key, NULL, 0);
	CFRelease(key);
	return v;
}

int main(void)
{
	CFMutableDictionaryRef m = IOServiceMatching("AGXAccelerator");
	io_iterator_t it = IO_OBJECT_NULL;
	io_object_t s;
	kern_return_t kr;
	int n = 0;

	if (!m)
		return 10;
	kr = IOServiceGetMatchingServices(MACH_PORT_NULL, m, &it);
	if (kr != KERN_SUCCESS) {
		printf("error 0x%x\n", (unsigned) kr);
		return 0;
	}
	if (it == IO_OBJECT_NULL) {
		printf("none\n");
		return 0;
	}
	while ((s = IOIteratorNext(it)) != IO_OBJECT_NULL) {
		char model[64] = "";
		int64_t cores = -1;
		int small = 0;
		CFTypeRef v = prop(s, "model");
		if (v) {
			char tiny[4];
			if (CFGetTypeID(v) != CFStringGetTypeID())
				return 11;
			if (!CFStringGetCString((CFStringRef) v, model, sizeof(model), kCFStringEncodingUTF8))
				return 12;
			small = CFStringGetCString((CFStringRef) v, tiny, sizeof(tiny), kCFStringEncodingUTF8);
			CFRelease(v);
		}
		v = prop(s, "gpu-core-count");
		if (v) {
			int32_t narrow = 0;
			if (CFGetTypeID(v) != CFNumberGetTypeID())
				return 13;
			if (!CFNumberGetValue((CFNumberRef) v, kCFNumberSInt64Type, &cores))
				return 14;
			if (!CFNumberGetValue((CFNumberRef) v, kCFNumberSInt32Type, &narrow) || narrow != cores)
				return 15;
			CFRelease(v);
		}
		if (prop(s, "no-such-property"))
			return 16;
		printf("gpu %s cores %lld small %d\n", model, (long long) cores, small);
		n++;
		if (IOObjectRelease(s) != KERN_SUCCESS)
			return 17;
	}
	if (IOObjectRelease(it) != KERN_SUCCESS || IOObjectRelease(it) == KERN_SUCCESS)
		return 18; /* a second release of the name is KERN_INVALID_NAME */
	printf("found %d\n", n);
	return 0;
}
"#;

/// `name`: the scratch directory (one per test: they run in parallel).
fn probe(name: &str, env: &[(&str, &str)]) -> common::darwin_c::Run {
    common::darwin_c::run(name, PROBE, &[], env)
}

fn hardware(name: &str, text: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("iokit-hw");
    std::fs::create_dir_all(&dir).expect("dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn iokit__no_hardware_file_means_no_gpu_and_a_null_iterator() {
    let run = probe("iokit-none", &[("SLURM_SHIM_MAC_HARDWARE", "")]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "none\n");
    assert!(
        run.log
            .contains("IOServiceGetMatchingServices (macOS IOKit)"),
        "{}",
        run.log
    );
}

#[test]
fn iokit__the_hardware_files_gpu_is_found() {
    let hw = hardware(
        "m4max",
        "machdep.cpu.brand_string = Apple M4 Max\nagx.0.model = Apple M4 Max\nagx.0.gpu-core-count = 40\n",
    );
    let run = probe(
        "iokit-m4max",
        &[("SLURM_SHIM_MAC_HARDWARE", hw.to_str().expect("utf-8"))],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "gpu Apple M4 Max cores 40 small 0\nfound 1\n");
}

/// The same lookup in this process: every CF object and IOKit name it was given is gone
/// after the releases (the only test of this binary that makes objects in-process).
#[test]
fn iokit__the_lookup_releases_everything_it_was_given() {
    use slurm_shim::emulate::corefoundation::{self as cf, *};
    use slurm_shim::emulate::iokit::{self, *};
    let hw = hardware(
        "leaks",
        "agx.0.model = Apple M4 Max\nagx.0.gpu-core-count = 40\n",
    );
    // SAFETY: single-threaded use of this process's environment in this test binary's only
    // in-process test; the C strings are NUL-terminated literals.
    unsafe { std::env::set_var("SLURM_SHIM_MAC_HARDWARE", &hw) };
    let (cf0, io0) = (cf::live(), iokit::live());
    // SAFETY: the calls get valid NUL-terminated strings and out-pointers.
    unsafe {
        let m = slurm_shim_IOServiceMatching(c"AGXAccelerator".as_ptr());
        let mut it = 0;
        assert_eq!(
            slurm_shim_IOServiceGetMatchingServices(0, m, &mut it),
            KERN_SUCCESS
        );
        assert_ne!(it, 0);
        let s = slurm_shim_IOIteratorNext(it);
        assert_ne!(s, 0);
        let key = slurm_shim_CFStringCreateWithCString(
            std::ptr::null(),
            c"gpu-core-count".as_ptr(),
            kCFStringEncodingUTF8,
        );
        let v = slurm_shim_IORegistryEntryCreateCFProperty(s, key, std::ptr::null(), 0);
        let mut n: i64 = 0;
        assert_eq!(slurm_shim_CFGetTypeID(v), slurm_shim_CFNumberGetTypeID());
        assert_eq!(
            slurm_shim_CFNumberGetValue(v, number_type::SInt64, (&raw mut n).cast()),
            1
        );
        assert_eq!(n, 40);
        slurm_shim_CFRelease(v);
        slurm_shim_CFRelease(key);
        assert_eq!(slurm_shim_IOIteratorNext(it), 0, "one GPU");
        assert_eq!(slurm_shim_IOObjectRelease(s), KERN_SUCCESS);
        assert_eq!(slurm_shim_IOObjectRelease(it), KERN_SUCCESS);
    }
    assert_eq!(
        (cf::live(), iokit::live()),
        (cf0, io0),
        "objects left behind"
    );
}

#[test]
fn iokit__a_broken_hardware_file_is_kioreturnerror() {
    let hw = hardware("broken", "agx.0.model = M\nthis is not a line\n");
    let run = probe(
        "iokit-broken",
        &[("SLURM_SHIM_MAC_HARDWARE", hw.to_str().expect("utf-8"))],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "error 0xe00002bc\n");
    assert!(run.log.contains("cannot be read or parsed"), "{}", run.log);
    let run = probe(
        "iokit-missing",
        &[("SLURM_SHIM_MAC_HARDWARE", "/nonexistent/hardware")],
    );
    assert_eq!(run.stdout, "error 0xe00002bc\n");
}

#[test]
fn cfrelease__null_halts_the_process_as_corefoundation_does() {
    let src = r#"#include <CoreFoundation/CoreFoundation.h>
int main(void)
{
	CFRelease(NULL);
	return 0;
}
"#;
    let run = common::darwin_c::run("cfrelease-null", src, &[], &[]);
    assert_eq!(run.code, None, "CFRelease(NULL) must not return: {run:?}");
    assert!(run.log.contains("CFRelease(NULL) halts"), "{}", run.log);
}

#[test]
fn cfrelease__twice_halts_the_process() {
    let src = r#"#include <CoreFoundation/CoreFoundation.h>
int main(void)
{
	CFStringRef s = CFStringCreateWithCString(NULL, "x", kCFStringEncodingUTF8);
	CFRelease(s);
	CFRelease(s);
	return 0;
}
"#;
    let run = common::darwin_c::run("cfrelease-twice", src, &[], &[]);
    assert_eq!(run.code, None, "{run:?}");
    assert!(run.log.contains("not a live CF object"), "{}", run.log);
}
