//! Release builds of the `openhands-agent-server` binary linked by the
//! toolchain's own linker (rust-lld, the default on x86_64 Linux) get two
//! link options that shrink the server's resident memory without changing
//! what it does:
//!
//! - `--symbol-ordering-file=startup-order.txt`: the functions the server
//!   runs from start through a short benchmark (listed by
//!   `scripts/startup_order.py`) are
//!   laid out together at the front of the code, instead of spread over
//!   50 MB of it, where each touched function brings its 64 kB
//!   neighbourhood into memory (the kernel maps file pages around a fault).
//! - `-z pack-relative-relocs`: the relocation table the loader reads at
//!   every start shrinks from about 2 MB to a few kB (needs glibc 2.36 to
//!   load, so only when building on such a system for itself).
//!
//! A build that picks its own linker (`-fuse-ld=...`, `-C linker=...`),
//! another target, or a debug profile links exactly as before. A stale
//! list (after a toolchain or dependency upgrade renames symbols) costs
//! memory, not correctness: the linker skips names it does not know.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "a build script reads what cargo tells it through its environment and asks getconf about the C library"
)]

use std::env;
use std::process::Command;

/// Where the start-up order lives, relative to this crate.
const ORDER_FILE: &str = "startup-order.txt";

/// The binary the options apply to.
const BINARY: &str = "openhands-agent-server";

fn main() {
    println!("cargo:rerun-if-changed={ORDER_FILE}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    if !links_with_rust_lld() {
        return;
    }
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = std::path::Path::new(&manifest_dir).join(ORDER_FILE);
    if order.is_file() {
        link_arg(&format!("-Wl,--symbol-ordering-file={}", order.display()));
        link_arg("-Wl,--no-warn-symbol-ordering");
    }
    if host_glibc_at_least(2, 36) {
        link_arg("-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this is a native release build for x86_64 Linux linked by the
/// toolchain's default linker (rust-lld).
fn links_with_rust_lld() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    let target = var("TARGET");
    if var("PROFILE") != "release"
        || target != "x86_64-unknown-linux-gnu"
        || var("HOST") != target
        || env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
    {
        return false;
    }
    !var("CARGO_ENCODED_RUSTFLAGS")
        .split('\x1f')
        .any(|flag| flag.contains("fuse-ld") || flag.contains("linker"))
}

/// Whether the C library of the building system is glibc of at least
/// `major.minor` (`getconf GNU_LIBC_VERSION` says e.g. "glibc 2.36").
fn host_glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(output) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(have_major), Some(have_minor)) => (have_major, have_minor) >= (major, minor),
        _ => false,
    }
}

/// Passes `arg` to the linker for the server binary only.
fn link_arg(arg: &str) {
    println!("cargo:rustc-link-arg-bin={BINARY}={arg}");
}
