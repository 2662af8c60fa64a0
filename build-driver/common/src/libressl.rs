//! A stand-in for macOS's `/usr/bin/openssl` (LibreSSL), as far as Slurm's certgen/script
//! needs it: LibreSSL's `req` without `-new` (or `-in`) expects a certificate request on
//! stdin ("Expecting: CERTIFICATE REQUEST", rc 1; the proof of concept's D23, seen with
//! LibreSSL 3.3.6), which OpenSSL does not. Everything else is passed to the real openssl.
//! Used by the certgen patch test (build-driver) and the TLS scenario (build-driver/lab).

/// The script, with `REAL` where the real openssl's path goes ([`script`]).
const TEMPLATE: &str = "#!/bin/sh\n# LibreSSL-like openssl (driver_common::libressl): `req` needs -new or -in.\ncase \" $* \" in\n  *\" req \"*)\n    case \" $* \" in\n      *\" -new \"*|*\" -in \"*) ;;\n      *) echo 'unable to load X509 request' >&2; echo 'Expecting: CERTIFICATE REQUEST' >&2; exit 1 ;;\n    esac ;;\nesac\nexec REAL \"$@\"\n";

/// The stand-in's text, passing everything else to `real` (an absolute path).
pub fn script(real: &std::path::Path) -> String {
    TEMPLATE.replace("REAL", &real.display().to_string())
}
