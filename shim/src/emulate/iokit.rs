//! IOKit's registry lookups as gpu/apple makes them (`IOServiceMatching`,
//! `IOServiceGetMatchingServices`, `IOIteratorNext`, `IORegistryEntryCreateCFProperty`,
//! `IOObjectRelease`), answered from the modelled Mac of [`super::mac_hardware`] (darwin
//! personality only; declared by the stand-in `shim/include/emulate/IOKit/IOKitLib.h`).
//!
//! macOS behaviour emulated (IOKitUser-100222.0.4, apple-oss-distributions/IOKitUser,
//! `IOKitLib.h` and `IOKitLib.c`; xnu-11417.101.15 `osfmk/ipc/mach_port.c`):
//!
//! * `IOServiceMatching(name)`: a new matching dictionary (`IOProviderClass = name`, one
//!   reference) that selects services of that class or a subclass.
//! * `IOServiceGetMatchingServices(mainPort, matching, &existing)`: `mainPort` is
//!   `MACH_PORT_NULL` (= `kIOMainPortDefault`, "a synonym for NULL"); one reference of
//!   `matching` is always consumed; `NULL` matching is `kIOReturnBadArgument`. On success
//!   `existing` is an iterator, **or `IO_OBJECT_NULL` when nothing matched** ("If NULL is
//!   returned, the iteration was successful but found no matching services").
//! * `IOIteratorNext`: the next service (a new object the caller releases), `0` at the end
//!   and for an invalid iterator (including `0`).
//! * `IORegistryEntryCreateCFProperty(entry, key, allocator, 0)`: a new CFString or
//!   CFNumber for the property, `NULL` if the entry has none or is not an entry.
//! * `IOObjectRelease`: `mach_port_deallocate`: `KERN_SUCCESS` for `MACH_PORT_NULL`,
//!   `KERN_INVALID_NAME` for a name the task does not hold.
//!
//! Linux mechanism: the services of the hardware file (`SLURM_SHIM_MAC_HARDWARE`; default:
//! no GPU, so nothing matches); objects are names in a process-wide table, each with one
//! reference. A file that cannot be read or parsed makes `IOServiceGetMatchingServices`
//! return `kIOReturnError` (reported once per call site in the emulation log).
//!
//! Portability problems not fixed: other main ports give `MACH_SEND_INVALID_DEST`; only the
//! `IOProviderClass` key of a matching dictionary is looked at; an object has one reference
//! (no `IOObjectRetain`); property values are strings and numbers only.
#![allow(clippy::missing_safety_doc, non_snake_case, non_upper_case_globals)]

use libc::{c_char, c_int, c_uint, c_void};
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::sync::{Mutex, MutexGuard};

use super::corefoundation::{self as cf, CFTypeRef, Kind};
use super::mac_hardware::{self, Service, Value};

/// `mach_port_t`, `io_object_t`, `io_iterator_t`, `io_registry_entry_t`, `io_service_t`.
pub type io_object_t = c_uint;
/// `kern_return_t`.
pub type kern_return_t = c_int;

/// `KERN_SUCCESS`.
pub const KERN_SUCCESS: kern_return_t = 0;
/// `KERN_INVALID_NAME`.
pub const KERN_INVALID_NAME: kern_return_t = 15;
/// `MACH_SEND_INVALID_DEST`.
pub const MACH_SEND_INVALID_DEST: kern_return_t = 0x1000_0003;
/// `kIOReturnError` (`iokit_common_err(0x2bc)`).
pub const kIOReturnError: kern_return_t = 0xe000_02bc_u32 as kern_return_t;
/// `kIOReturnBadArgument` (`iokit_common_err(0x2c2)`).
pub const kIOReturnBadArgument: kern_return_t = 0xe000_02c2_u32 as kern_return_t;

/// The key of a matching dictionary that names the class (IOKitKeys.h).
pub const IO_PROVIDER_CLASS: &str = "IOProviderClass";

#[derive(Debug)]
enum Object {
    Iterator { services: Vec<Service>, next: usize },
    Entry(Service),
}

#[derive(Debug)]
struct Names {
    next: io_object_t,
    objects: BTreeMap<io_object_t, Object>,
}

static NAMES: Mutex<Names> = Mutex::new(Names {
    next: 0x1003,
    objects: BTreeMap::new(),
});

fn names() -> MutexGuard<'static, Names> {
    // A poisoned lock cannot happen (panic = "abort"); take it anyway.
    NAMES.lock().unwrap_or_else(|e| e.into_inner())
}

fn insert(o: Object) -> io_object_t {
    let mut n = names();
    // Mach names here look like XNU's (index << 8 | generation): never 0.
    let name = n.next;
    n.next = n.next.wrapping_add(0x100).max(0x1003);
    n.objects.insert(name, o);
    name
}

/// How many IOKit objects are held (tests: nothing leaks).
pub fn live() -> usize {
    names().objects.len()
}

/// `IOServiceMatching(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_IOServiceMatching(name: *const c_char) -> CFTypeRef {
    crate::counted!(slurm_shim_IOServiceMatching);
    if name.is_null() {
        return std::ptr::null();
    }
    // SAFETY: the caller passes a NUL-terminated class name.
    let class = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    cf::create(Kind::Dictionary(vec![(
        IO_PROVIDER_CLASS.to_string(),
        class,
    )]))
}

/// The services a matching dictionary selects on `hw`.
pub fn select(hw: &mac_hardware::Hardware, matching: &Kind) -> Vec<Service> {
    let Kind::Dictionary(entries) = matching else {
        return Vec::new();
    };
    match entries.iter().find(|(k, _)| k == IO_PROVIDER_CLASS) {
        Some((_, class)) => hw.matching(class),
        None => Vec::new(),
    }
}

/// `IOServiceGetMatchingServices(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_IOServiceGetMatchingServices(
    main_port: c_uint,
    matching: CFTypeRef,
    existing: *mut io_object_t,
) -> kern_return_t {
    crate::counted!(slurm_shim_IOServiceGetMatchingServices);
    if matching.is_null() {
        return kIOReturnBadArgument;
    }
    let Some(kind) = cf::kind_of(matching) else {
        cf::halt(
            "IOServiceGetMatchingServices with a matching dictionary that is not a live CF object halts the process (CoreFoundation)",
        );
    };
    // One reference is always consumed (IOKitLib.c releases it before the kernel call).
    cf::release(matching);
    if main_port != 0 {
        return MACH_SEND_INVALID_DEST;
    }
    if existing.is_null() {
        cf::halt("IOServiceGetMatchingServices(existing = NULL) writes through NULL on macOS");
    }
    super::report::applied(
        "IOServiceGetMatchingServices (macOS IOKit) answered from the darwin personality's hardware file",
    );
    let hw = match mac_hardware::load() {
        Ok(hw) => hw,
        Err(_) => {
            super::report::applied(
                "IOServiceGetMatchingServices: SLURM_SHIM_MAC_HARDWARE names a file that cannot be read or parsed -> kIOReturnError",
            );
            return kIOReturnError;
        }
    };
    let services = select(&hw, &kind);
    let it = if services.is_empty() {
        0
    } else {
        insert(Object::Iterator { services, next: 0 })
    };
    // SAFETY: non-NULL; the caller's out-parameter.
    unsafe { *existing = it };
    KERN_SUCCESS
}

/// `IOIteratorNext(3)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_IOIteratorNext(iterator: io_object_t) -> io_object_t {
    crate::counted!(slurm_shim_IOIteratorNext);
    let service = {
        let mut n = names();
        match n.objects.get_mut(&iterator) {
            Some(Object::Iterator { services, next }) => {
                let s = services.get(*next).cloned();
                if s.is_some() {
                    *next += 1;
                }
                s
            }
            _ => None,
        }
    };
    match service {
        Some(s) => insert(Object::Entry(s)),
        None => 0,
    }
}

/// `IORegistryEntryCreateCFProperty(3)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_IORegistryEntryCreateCFProperty(
    entry: io_object_t,
    key: CFTypeRef,
    _allocator: *const c_void,
    _options: c_uint,
) -> CFTypeRef {
    crate::counted!(slurm_shim_IORegistryEntryCreateCFProperty);
    let Some(Kind::Str(key)) = cf::kind_of(key) else {
        cf::halt(
            "IORegistryEntryCreateCFProperty with a key that is not a live CFString halts the process (CoreFoundation)",
        );
    };
    let value = {
        let n = names();
        match n.objects.get(&entry) {
            Some(Object::Entry(s)) => s.prop(&String::from_utf8_lossy(&key)).cloned(),
            _ => None,
        }
    };
    match value {
        Some(Value::Int(i)) => cf::create(Kind::Number(i)),
        Some(Value::Str(s)) => cf::create(Kind::Str(s.into_bytes())),
        None => std::ptr::null(),
    }
}

/// `IOObjectRelease(3)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_IOObjectRelease(object: io_object_t) -> kern_return_t {
    crate::counted!(slurm_shim_IOObjectRelease);
    if object == 0 {
        return KERN_SUCCESS;
    }
    match names().objects.remove(&object) {
        Some(_) => KERN_SUCCESS,
        None => KERN_INVALID_NAME,
    }
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn select__by_provider_class_only() {
        let hw = mac_hardware::parse("agx.0.model = Apple M4 Max\n").unwrap();
        let m = |c: &str| Kind::Dictionary(vec![(IO_PROVIDER_CLASS.into(), c.into())]);
        assert_eq!(select(&hw, &m("AGXAccelerator")).len(), 1);
        assert_eq!(select(&hw, &m("IOAccelerator")).len(), 1);
        assert!(select(&hw, &m("IOUSBHostDevice")).is_empty());
        assert!(select(&hw, &Kind::Dictionary(vec![])).is_empty());
        assert!(select(&hw, &Kind::Number(1)).is_empty());
    }

    #[test]
    fn io_object_release__null_is_success_unknown_is_invalid_name() {
        assert_eq!(slurm_shim_IOObjectRelease(0), KERN_SUCCESS);
        assert_eq!(slurm_shim_IOObjectRelease(0x7fff_ff03), KERN_INVALID_NAME);
        assert_eq!(slurm_shim_IOIteratorNext(0), 0);
    }
}
