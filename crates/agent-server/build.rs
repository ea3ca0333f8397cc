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
//! The list survives code changes because of two things. `.cargo/config.toml`
//! has LLVM name the functions thin LTO makes visible across code units after
//! the unit (`<name>.llvm.<crate>_<hash>_cgu_<n>`) instead of after a hash of
//! its contents; and since a change can move such a function to another unit
//! of its crate, or leave it local, this script hands the linker, for each
//! such name, every unit's variant and the bare name beside it (only one
//! exists in a given build). With one commit to the server crate undone
//! after a list was written, 3,924 of its 3,960 names were found in the
//! binary this way and 3,755 without the variants; before the unit naming
//! every suffixed name (a fifth of the list) changed with its unit's code.
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

use std::collections::HashSet;
use std::env;
use std::path::Path;
use std::process::Command;

/// Where the start-up order lives, relative to this crate.
const ORDER_FILE: &str = "startup-order.txt";

/// The binary the options apply to.
const BINARY: &str = "openhands-agent-server";

/// Code units per crate whose variants are listed (the release profile
/// has 4; more cost the linker nothing but a longer list).
const UNITS: u32 = 16;

fn main() {
    println!("cargo:rerun-if-changed={ORDER_FILE}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    if !links_with_rust_lld() {
        return;
    }
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = Path::new(&manifest_dir).join(ORDER_FILE);
    let expanded = Path::new(&env::var("OUT_DIR").unwrap_or_default()).join(ORDER_FILE);
    match std::fs::read_to_string(&order)
        .and_then(|list| std::fs::write(&expanded, with_unit_variants(&list)))
    {
        Ok(()) => {
            link_arg(&format!(
                "-Wl,--symbol-ordering-file={}",
                expanded.display()
            ));
            link_arg("-Wl,--no-warn-symbol-ordering");
        }
        Err(e) => println!(
            "cargo:warning=the code order {} is not used ({e}); the server links unordered",
            order.display()
        ),
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

/// The order `list` (comments dropped) with, after each name thin LTO
/// suffixed with its code unit, the bare name and the other units'
/// variants, each name once.
fn with_unit_variants(list: &str) -> String {
    let mut seen = HashSet::new();
    let mut out = String::with_capacity(list.len() * 4);
    let mut push = |name: &str, out: &mut String| {
        if seen.insert(name.to_string()) {
            out.push_str(name);
            out.push('\n');
        }
    };
    for name in list.lines().map(str::trim) {
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        push(name, &mut out);
        let Some((bare, suffix)) = name.split_once(".llvm.") else {
            continue;
        };
        push(bare, &mut out);
        let Some((unit_prefix, index)) = suffix.rsplit_once("_cgu_") else {
            continue;
        };
        if index.parse::<u32>().is_err() {
            continue;
        }
        for unit in 0..UNITS {
            push(&format!("{bare}.llvm.{unit_prefix}_cgu_{unit}"), &mut out);
        }
    }
    out
}

/// Passes `arg` to the linker for the server binary only.
fn link_arg(arg: &str) {
    println!("cargo:rustc-link-arg-bin={BINARY}={arg}");
}
