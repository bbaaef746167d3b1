//! `zfs`: the dataset command (OpenZFS `cmd/zfs/zfs_main.c`). Datasets are not built
//! yet; until they are, every subcommand but `version` fails with a clear message.

use std::io::Write;

pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match args.first().map(String::as_str) {
        Some("version") | Some("-V") | Some("--version") => {
            let _ = writeln!(out, "zetta {}", env!("CARGO_PKG_VERSION"));
            0
        }
        None => {
            let _ = writeln!(err, "usage: zfs command args ...");
            2
        }
        Some(_) => {
            let _ = writeln!(err, "zfs: datasets are not implemented yet");
            1
        }
    }
}
