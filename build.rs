//! Records the commit mm is built from, for `mm -version`.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown commit".to_string());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| o.status.success() && !o.stdout.is_empty());
    let suffix = if dirty { ", with local changes" } else { "" };
    println!("cargo:rustc-env=MM_COMMIT={commit}{suffix}");
    // Built again when HEAD moves (a commit, a checkout).
    for f in [".git/HEAD", ".git/index"] {
        if std::path::Path::new(f).exists() {
            println!("cargo:rerun-if-changed={f}");
        }
    }
    if let Ok(head) = std::fs::read_to_string(".git/HEAD")
        && let Some(r) = head.trim().strip_prefix("ref: ")
    {
        println!("cargo:rerun-if-changed=.git/{r}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    // Packed relative relocations (DT_RELR, issue 32): the binary's ~1 MB
    // of `.rela.dyn` becomes a few KB the loader reads at start, pages
    // that counted in every run's memory. Only where the linker packs them
    // and the C library runs what it packed (binutils 2.38, glibc 2.36).
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
        && std::env::var("HOST") == std::env::var("TARGET")
        && links_packed_relocations()
    {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the C toolchain links a program with packed relative
/// relocations, without a word of warning, and the program runs.
fn links_packed_relocations() -> bool {
    let Some(out) = std::env::var_os("OUT_DIR").map(std::path::PathBuf::from) else {
        return false;
    };
    let src = out.join("relr.c");
    let bin = out.join("relr");
    if std::fs::write(
        &src,
        "static int x; int *p = &x;\nint main(void) { return *p; }\n",
    )
    .is_err()
    {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let linked = Command::new(cc)
        .args(["-pie", "-fPIE", "-Wl,-z,pack-relative-relocs", "-o"])
        .arg(&bin)
        .arg(&src)
        .output();
    match linked {
        Ok(o) if o.status.success() && o.stderr.is_empty() => {
            Command::new(&bin).status().is_ok_and(|s| s.success())
        }
        _ => false,
    }
}
