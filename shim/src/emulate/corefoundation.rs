//! The CoreFoundation calls of IOKit users (gpu/apple): `CFStringCreateWithCString`,
//! `CFStringGetCString`, `CFNumberGetValue`, `CFGetTypeID`, `CFStringGetTypeID`,
//! `CFNumberGetTypeID`, `CFRelease`, answered by a small object model (darwin personality
//! only; declared by the stand-in `shim/include/emulate/CoreFoundation/CoreFoundation.h`).
//!
//! macOS behaviour emulated (CF-1153.18, apple-oss-distributions/CF): objects are reference
//! counted; `CFRelease`, `CFRetain` and `CFGetTypeID` of `NULL` halt the process
//! (CFRuntime.c: `"*** CFRelease() called with NULL ***"; HALT`), and so does a pointer that
//! is not a CF object (`__CFGenericAssertIsCF`), for example one already released: here both
//! are reported and the process aborts. Type ids are registered at run time
//! (`_CFRuntimeRegisterClass`), so code compares them with `CFStringGetTypeID()` and
//! friends; their values here are arbitrary. `CFStringGetCString` fails (false, `buffer[0]
//! = 0`) when the string and its NUL do not fit or the size is below 1 (CFString.c).
//! `CFNumberGetValue` converts to the requested type and returns false when the value is
//! not exactly representable (CFNumber.c `__CFNumberGetValueCompat`), storing the
//! truncated value. The allocator argument may be `NULL` (= `kCFAllocatorDefault`, CFBase.h).
//!
//! Linux mechanism: every object is a Rust allocation owned by one process-wide table; a
//! `CFTypeRef` is its address and is checked against the table on every call.
//!
//! Portability problems not fixed: strings are bytes, created from UTF-8 or ASCII only
//! (`kCFStringEncodingUTF8`, `kCFStringEncodingASCII`; other encodings give `NULL`) and
//! copied out unchanged; numbers are 64-bit integers (`kCFNumberFloat*`/`Double` conversions
//! are exact for values up to 2^53); dictionaries exist only as the matching dictionaries
//! [`super::iokit`] creates and offer no accessor.
#![allow(clippy::missing_safety_doc, non_snake_case, non_upper_case_globals)]

use libc::{c_char, c_long, c_ulong, c_void};
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::sync::{Mutex, MutexGuard};

/// `CFTypeRef`.
pub type CFTypeRef = *const c_void;
/// `CFIndex`.
pub type CFIndex = c_long;
/// `CFTypeID`.
pub type CFTypeID = c_ulong;
/// `Boolean`.
pub type Boolean = u8;
/// `CFStringEncoding`.
pub type CFStringEncoding = u32;
/// `CFNumberType`.
pub type CFNumberType = CFIndex;

/// `kCFStringEncodingASCII`.
pub const kCFStringEncodingASCII: CFStringEncoding = 0x0600;
/// `kCFStringEncodingUTF8`.
pub const kCFStringEncodingUTF8: CFStringEncoding = 0x0800_0100;

/// `CFNumberType` values (CFNumber.h).
pub mod number_type {
    use super::CFNumberType;
    pub const SInt8: CFNumberType = 1;
    pub const SInt16: CFNumberType = 2;
    pub const SInt32: CFNumberType = 3;
    pub const SInt64: CFNumberType = 4;
    pub const Float32: CFNumberType = 5;
    pub const Float64: CFNumberType = 6;
    pub const Char: CFNumberType = 7;
    pub const Short: CFNumberType = 8;
    pub const Int: CFNumberType = 9;
    pub const Long: CFNumberType = 10;
    pub const LongLong: CFNumberType = 11;
    pub const Float: CFNumberType = 12;
    pub const Double: CFNumberType = 13;
    pub const CFIndex: CFNumberType = 14;
    pub const NSInteger: CFNumberType = 15;
    pub const CGFloat: CFNumberType = 16;
}

/// The model's type ids (arbitrary; compared only with the `*GetTypeID` answers).
pub const STRING_TYPE_ID: CFTypeID = 7;
/// CFNumber's.
pub const NUMBER_TYPE_ID: CFTypeID = 22;
/// CFDictionary's.
pub const DICTIONARY_TYPE_ID: CFTypeID = 18;

/// What an object holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A CFString's bytes (no NUL).
    Str(Vec<u8>),
    /// A CFNumber.
    Number(i64),
    /// A dictionary of string keys and values (IOKit's matching dictionaries).
    Dictionary(Vec<(String, String)>),
}

impl Kind {
    fn type_id(&self) -> CFTypeID {
        match self {
            Kind::Str(_) => STRING_TYPE_ID,
            Kind::Number(_) => NUMBER_TYPE_ID,
            Kind::Dictionary(_) => DICTIONARY_TYPE_ID,
        }
    }
}

#[derive(Debug)]
struct Object {
    kind: Kind,
    refs: usize,
}

/// Live objects by address (the address of their boxed storage).
static OBJECTS: Mutex<BTreeMap<usize, Box<Object>>> = Mutex::new(BTreeMap::new());

fn objects() -> MutexGuard<'static, BTreeMap<usize, Box<Object>>> {
    // A poisoned lock cannot happen (panic = "abort"); take it anyway.
    OBJECTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Creates an object with one reference; returns its `CFTypeRef`.
pub fn create(kind: Kind) -> CFTypeRef {
    let b = Box::new(Object { kind, refs: 1 });
    let addr = std::ptr::from_ref::<Object>(&b) as usize;
    objects().insert(addr, b);
    addr as CFTypeRef
}

/// What `cf` holds, if it is a live object.
pub fn kind_of(cf: CFTypeRef) -> Option<Kind> {
    objects().get(&(cf as usize)).map(|o| o.kind.clone())
}

/// How many objects are alive (tests: nothing leaks).
pub fn live() -> usize {
    objects().len()
}

/// Drops one reference; false if `cf` is not a live object.
pub fn release(cf: CFTypeRef) -> bool {
    let mut map = objects();
    let key = cf as usize;
    match map.get_mut(&key) {
        None => false,
        Some(o) if o.refs > 1 => {
            o.refs -= 1;
            true
        }
        Some(_) => {
            map.remove(&key);
            true
        }
    }
}

/// CoreFoundation halts the process on a NULL or foreign object; so does the model.
pub fn halt(behaviour: &'static str) -> ! {
    super::report::applied(behaviour);
    // SAFETY: abort has no preconditions; it does not return.
    unsafe { libc::abort() }
}

/// `CFRelease(3)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_CFRelease(cf: CFTypeRef) {
    crate::counted!(slurm_shim_CFRelease);
    if cf.is_null() {
        halt("CFRelease(NULL) halts the process (CoreFoundation CFRuntime.c)");
    }
    if !release(cf) {
        halt(
            "CFRelease of a pointer that is not a live CF object halts the process (CoreFoundation __CFGenericAssertIsCF)",
        );
    }
}

/// `CFGetTypeID(3)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_CFGetTypeID(cf: CFTypeRef) -> CFTypeID {
    crate::counted!(slurm_shim_CFGetTypeID);
    if cf.is_null() {
        halt("CFGetTypeID(NULL) halts the process (CoreFoundation CFRuntime.c)");
    }
    match kind_of(cf) {
        Some(k) => k.type_id(),
        None => halt(
            "CFGetTypeID of a pointer that is not a live CF object halts the process (CoreFoundation __CFGenericAssertIsCF)",
        ),
    }
}

/// `CFStringGetTypeID(3)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_CFStringGetTypeID() -> CFTypeID {
    crate::counted!(slurm_shim_CFStringGetTypeID);
    STRING_TYPE_ID
}

/// `CFNumberGetTypeID(3)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_CFNumberGetTypeID() -> CFTypeID {
    crate::counted!(slurm_shim_CFNumberGetTypeID);
    NUMBER_TYPE_ID
}

/// The bytes of a C string in `encoding`, `None` if they are not valid in it.
pub fn string_in(bytes: &[u8], encoding: CFStringEncoding) -> Option<Vec<u8>> {
    match encoding {
        kCFStringEncodingUTF8 => std::str::from_utf8(bytes).ok().map(|_| bytes.to_vec()),
        kCFStringEncodingASCII => bytes.is_ascii().then(|| bytes.to_vec()),
        _ => None,
    }
}

/// `CFStringCreateWithCString(3)`: `NULL` when the bytes are not valid in `encoding`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_CFStringCreateWithCString(
    _alloc: *const c_void,
    c_str: *const c_char,
    encoding: CFStringEncoding,
) -> CFTypeRef {
    crate::counted!(slurm_shim_CFStringCreateWithCString);
    if c_str.is_null() {
        halt("CFStringCreateWithCString(NULL) halts the process (CoreFoundation reads the string)");
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(c_str) }.to_bytes();
    match string_in(bytes, encoding) {
        Some(b) => create(Kind::Str(b)),
        None => std::ptr::null(),
    }
}

/// Copies `s` and a NUL into `buffer` of `size` bytes; false (and `buffer[0] = 0` when there
/// is room) when it does not fit or is not valid in `encoding`.
///
/// # Safety
/// `buffer` must be writable for `size` bytes when `size > 0`.
pub unsafe fn copy_c_string(
    s: &[u8],
    buffer: *mut c_char,
    size: CFIndex,
    encoding: CFStringEncoding,
) -> bool {
    if size < 1 || buffer.is_null() {
        return false;
    }
    let fits = string_in(s, encoding).is_some() && (s.len() as u64) < size as u64;
    // SAFETY: `buffer` is writable for `size >= 1` bytes; on success `s.len() + 1 <= size`.
    unsafe {
        if !fits {
            *buffer = 0;
            return false;
        }
        std::ptr::copy_nonoverlapping(s.as_ptr(), buffer.cast::<u8>(), s.len());
        *buffer.add(s.len()) = 0;
    }
    true
}

/// `CFStringGetCString(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_CFStringGetCString(
    string: CFTypeRef,
    buffer: *mut c_char,
    size: CFIndex,
    encoding: CFStringEncoding,
) -> Boolean {
    crate::counted!(slurm_shim_CFStringGetCString);
    let Some(Kind::Str(s)) = kind_of(string) else {
        halt(
            "CFStringGetCString of something that is not a live CFString halts the process (CoreFoundation __CFAssertIsString)",
        );
    };
    // SAFETY: the caller's buffer holds `size` bytes.
    unsafe { copy_c_string(&s, buffer, size, encoding) as Boolean }
}

/// `value` converted to `ty`: the bytes to store and whether the conversion was exact;
/// `None` for an unknown type.
pub fn number_bytes(value: i64, ty: CFNumberType) -> Option<(Vec<u8>, bool)> {
    use number_type as t;
    fn int<T: TryFrom<i64> + Copy>(
        v: i64,
        cast: fn(i64) -> T,
        bytes: fn(T) -> Vec<u8>,
    ) -> (Vec<u8>, bool) {
        let exact = T::try_from(v).is_ok();
        (bytes(cast(v)), exact)
    }
    Some(match ty {
        t::SInt8 | t::Char => int::<i8>(value, |v| v as i8, |x| x.to_ne_bytes().to_vec()),
        t::SInt16 | t::Short => int::<i16>(value, |v| v as i16, |x| x.to_ne_bytes().to_vec()),
        t::SInt32 | t::Int => int::<i32>(value, |v| v as i32, |x| x.to_ne_bytes().to_vec()),
        t::SInt64 | t::LongLong | t::Long | t::CFIndex | t::NSInteger => {
            (value.to_ne_bytes().to_vec(), true)
        }
        t::Float32 | t::Float => {
            let f = value as f32;
            (f.to_ne_bytes().to_vec(), f as i64 == value)
        }
        t::Float64 | t::Double | t::CGFloat => {
            let f = value as f64;
            (f.to_ne_bytes().to_vec(), f as i64 == value)
        }
        _ => return None,
    })
}

/// `CFNumberGetValue(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_CFNumberGetValue(
    number: CFTypeRef,
    ty: CFNumberType,
    value: *mut c_void,
) -> Boolean {
    crate::counted!(slurm_shim_CFNumberGetValue);
    let Some(Kind::Number(n)) = kind_of(number) else {
        halt(
            "CFNumberGetValue of something that is not a live CFNumber halts the process (CoreFoundation __CFAssertIsNumber)",
        );
    };
    let Some((bytes, exact)) = number_bytes(n, ty) else {
        halt(
            "CFNumberGetValue with an invalid CFNumberType halts the process (CoreFoundation __CFAssertIsValidNumberType)",
        );
    };
    if !value.is_null() {
        // SAFETY: the caller's `value` holds an object of type `ty`, whose size `bytes` has.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), value.cast::<u8>(), bytes.len()) };
    }
    exact as Boolean
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn cfnumber__conversions_report_exactness() {
        assert_eq!(
            number_bytes(40, number_type::Int),
            Some((40i32.to_ne_bytes().to_vec(), true))
        );
        let (b, exact) = number_bytes(1 << 40, number_type::SInt32).unwrap();
        assert!(!exact);
        assert_eq!(b, 0i32.to_ne_bytes().to_vec());
        assert_eq!(
            number_bytes(300, number_type::SInt8).map(|x| x.1),
            Some(false)
        );
        assert_eq!(
            number_bytes(7, number_type::Double).map(|x| x.1),
            Some(true)
        );
        assert_eq!(number_bytes(7, 99), None);
    }

    #[test]
    fn cfstring__copy_needs_room_for_the_nul() {
        let mut buf = [0x55 as c_char; 4];
        // SAFETY: `buf` holds 4 bytes.
        unsafe {
            assert!(!copy_c_string(
                b"abcd",
                buf.as_mut_ptr(),
                4,
                kCFStringEncodingUTF8
            ));
            assert_eq!(buf[0], 0);
            assert!(copy_c_string(
                b"abc",
                buf.as_mut_ptr(),
                4,
                kCFStringEncodingUTF8
            ));
            assert_eq!(buf, [b'a' as c_char, b'b' as c_char, b'c' as c_char, 0]);
            assert!(!copy_c_string(
                b"\xc3\xa9",
                buf.as_mut_ptr(),
                4,
                kCFStringEncodingASCII
            ));
            assert!(!copy_c_string(
                b"a",
                buf.as_mut_ptr(),
                0,
                kCFStringEncodingUTF8
            ));
        }
    }

    #[test]
    fn cfobjects__release_frees_at_zero() {
        let s = create(Kind::Str(b"x".to_vec()));
        assert_eq!(kind_of(s), Some(Kind::Str(b"x".to_vec())));
        assert!(release(s));
        assert_eq!(kind_of(s), None);
        assert!(!release(s), "a released object is no longer a CF object");
    }
}
