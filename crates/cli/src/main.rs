//! The `zetta` binary: behaves as `zpool`, `zfs` or `zinject` when invoked under those names (a
//! symlink made by `zetta install-links DIR`), and as `zetta <zpool|zfs|…>` otherwise.
//! All logic lives in the library; this file only picks the front end by the basename
//! of argv[0], hands it the real stdout/stderr and exits with its code.

mod large_alloc;

/// The daemon allocates and frees a record-sized buffer per block it touches; mimalloc
/// keeps that off the page-fault path (16% of daemon samples with glibc malloc under a
/// sequential write, bench/README.md). Allocations of `LARGE_BYTES_MIN` and more are
/// mappings of their own (see `large_alloc`).
#[global_allocator]
static ALLOCATOR: large_alloc::LargeMapped<mimalloc::MiMalloc> =
    large_alloc::LargeMapped(mimalloc::MiMalloc);

use std::io::Write;

fn main() {
    large_alloc::disable_transparent_huge_pages();
    let mut argv = std::env::args_os().map(|a| a.to_string_lossy().into_owned());
    let program = argv.next().unwrap_or_default();
    let args: Vec<String> = argv.collect();
    let basename = std::path::Path::new(&program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Unlocked handles (each write takes the lock): `zetta daemon` runs its server on this
    // thread for the process's whole life, and a lock held here would block every
    // `eprintln!` of its other threads — a mount thread logging an I/O error while holding
    // its pool's lock then hung the pool (and the reader, in D state) for good.
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let code = match basename.as_str() {
        "zpool" | "zfs" => zetta_cli::dispatch(&basename, &args, &mut out, &mut err),
        "zinject" => zetta_cli::zinject::run(&args, &mut out, &mut err),
        _ => zetta_cli::run_zetta(&args, &mut out, &mut err),
    };
    let _ = out.flush();
    let _ = err.flush();
    // OpenZFS's zfs and zpool dump core on exit when ZFS_ABORT is set, whatever the
    // command did (usage errors included), after printing this line: the suite's
    // zfs_002_pos and zpool_002_pos check that every subcommand does.
    if matches!(basename.as_str(), "zpool" | "zfs") && std::env::var_os("ZFS_ABORT").is_some() {
        let _ = out.write_all(b"dumping core by request\n");
        let _ = out.flush();
        std::process::abort();
    }
    std::process::exit(code);
}
