//! `zfs receive` / `zfs recv` (OpenZFS `zfs_do_receive`, `zfs_receive`): reads a stream from
//! standard input into a filesystem (`zetta::dmu_send::Receiver`).
//!
//! `receive [-FhMnsuv] [-d|-e] [-o prop=value]… [-x prop]… target` and `receive -A fs`.
//! Input is read a chunk at a time with the pool let go, then the pool is locked to apply
//! the chunk; so the receive never holds a lock while it waits for a slow (or same-pool)
//! sender. The client process keeps its own argv, so a running receive shows in `ps` as
//! `zfs receive … target`, which syncoid's busy check looks for.

use super::send::PoolSession;
use super::{pool_of, validate, CommandIo};
use crate::zpool::{fail, getopt, pool, usage, CmdError, CmdResult, Ctx};
use std::io::Read;
use std::time::Instant;
use zetta::dmu_send::{
    abort_resumable_receive, NameMode, Receiver, RecvError, RecvEvent, RecvOptions,
};
use zetta_zprop::SetValue;
use zetta_zutil::nicenum::nicenum_space;

/// Bytes of input applied per pool visit.
const INPUT_CHUNK_BYTES: usize = 1 << 20;

fn recv_fail(e: RecvError) -> CmdError {
    CmdError::Fail(super::errors::recv_error_text(&e))
}

/// Fills `buf` from the input (short only at its end).
fn read_chunk(input: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// `zfs receive …`
pub(super) fn cmd_receive(args: &[String], io: &mut CommandIo<'_>, ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "AdeFhno:suvx:")?;
    if parsed.has('A') {
        let [fs] = parsed.operands.as_slice() else {
            return usage("missing filesystem argument");
        };
        let mut session = PoolSession::new(pool_of(fs));
        session
            .with(|spa| abort_resumable_receive(spa, fs))
            .map_err(|_| CmdError::Fail(format!("cannot open '{fs}': dataset does not exist")))?
            .map_err(recv_fail)?;
        return session.commit(&format!("zfs receive {}", args.join(" ")));
    }
    let target = match parsed.operands.as_slice() {
        [target] => target.clone(),
        [] => return usage("missing snapshot argument"),
        _ => return usage("too many arguments"),
    };
    if parsed.has('d') && parsed.has('e') {
        return usage("-d and -e are mutually exclusive");
    }
    if io.stdin_is_terminal {
        return fail(
            "Error: Backup stream can not be read from a terminal.\nYou must redirect standard input.",
        );
    }
    // zfs_receive_one: the name received into must be a valid snapshot name (the target's
    // own, or the target with the stream's snapshot appended).
    let valid = if target.contains('@') {
        zetta_zprop::namecheck::validate_snapshot_name(&target, true)
    } else {
        zetta_zprop::namecheck::validate_dataset_name(&target, true)
    };
    if valid.is_err() {
        return fail("cannot receive: invalid name");
    }
    if let Ok(imported) = pool::open_pool_shared(pool_of(&target)) {
        pool::writable(&imported, "cannot receive new filesystem stream")?;
    }
    // parseprop/parsepropname: -o and -x fill one list, in the order given; `-x` takes a
    // name only, and a name given twice (by either option) is a usage error.
    let mut named: Vec<&str> = Vec::new();
    for (flag, value) in &parsed.options {
        let Some(value) = value.as_deref() else {
            continue;
        };
        let name = match flag {
            'o' => value.split_once('=').map_or(value, |(name, _)| name),
            'x' if value.contains('=') => {
                return usage("invalid character '=' in property argument")
            }
            'x' => value,
            _ => continue,
        };
        if named.contains(&name) {
            return usage(format!("property '{name}' specified multiple times"));
        }
        named.push(name);
    }
    let mut set_props = Vec::new();
    for option in parsed.values('o') {
        let Some((prop, value)) = option.split_once('=') else {
            return usage("missing '=' for property=value argument");
        };
        // Checked before any stream is read: a refused value receives nothing.
        let checked = validate(&target, prop, value, true).map_err(|e| match e {
            CmdError::Fail(message) => CmdError::Fail(message.replacen(
                &format!("cannot create '{target}'"),
                "cannot receive new filesystem stream",
                1,
            )),
            other => other,
        })?;
        let stored = match checked {
            SetValue::Native(prop, value) => (prop.name().to_string(), value.to_stored()),
            SetValue::User { name, value } => (name, value),
        };
        set_props.push(stored);
    }
    let options = RecvOptions {
        force: parsed.has('F'),
        dry_run: parsed.has('n'),
        resumable: parsed.has('s'),
        name_mode: if parsed.has('d') {
            NameMode::DiscardFirst
        } else if parsed.has('e') {
            NameMode::LastElement
        } else {
            NameMode::Exact
        },
        skip_holds: parsed.has('h'),
        set_props,
        exclude_props: parsed.values('x'),
    };
    let verbose = parsed.has('v');
    let started = Instant::now();
    let mut receiver = Receiver::new(&target, options);
    let mut session = PoolSession::new(pool_of(&target));
    // The pool must be there before any input is taken.
    session
        .with(|_| ())
        .map_err(|_| CmdError::Fail(format!("cannot open '{target}': dataset does not exist")))?;
    let mut buffer = vec![0u8; INPUT_CHUNK_BYTES];
    loop {
        let read = read_chunk(&mut *io.input, &mut buffer);
        let at_end = matches!(read, Ok(0));
        let outcome = match read {
            Ok(0) => session.with(|spa| receiver.finish(spa))?,
            Ok(n) => {
                // The write throttle, with no pool lock held (`dmu::tx`): a receive waits
                // for the sync thread instead of committing in its own request.
                pool::throttle_writes(pool_of(&target));
                session.with(|spa| receiver.feed(spa, &buffer[..n]))?
            }
            Err(e) => {
                let why = crate::zpool::pool::strerror(&e);
                Err(session.with(|spa| receiver.abort(spa, &why))?)
            }
        };
        if verbose {
            print_events(ctx, receiver.take_events(), started);
        }
        outcome.map_err(recv_fail)?;
        if at_end {
            break;
        }
    }
    if parsed.has('n') {
        return Ok(());
    }
    session.commit(&format!("zfs receive {}", args.join(" ")))
}

fn print_events(ctx: &mut Ctx, events: Vec<RecvEvent>, started: Instant) {
    for event in events {
        match event {
            RecvEvent::Receiving {
                incremental,
                to_name,
                dest_snap,
                dry_run,
            } => ctx.print(&format!(
                "{} {} stream of {to_name} into {dest_snap}\n",
                if dry_run {
                    "would receive"
                } else {
                    "receiving"
                },
                if incremental { "incremental" } else { "full" },
            )),
            RecvEvent::Received { bytes, .. } => {
                let secs = started.elapsed().as_secs().max(1);
                ctx.print(&format!(
                    "received {} stream in {secs} seconds ({}/sec)\n",
                    nicenum_space(bytes),
                    nicenum_space(bytes / secs)
                ));
            }
            RecvEvent::Skipped { dest_snap } => {
                ctx.print(&format!("snap {dest_snap} already exists; ignoring\n"))
            }
            RecvEvent::Destroying { name } => ctx.print(&format!("attempting destroy {name}\n")),
        }
    }
}
