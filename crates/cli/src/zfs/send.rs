//! `zfs send` (OpenZFS `zfs_do_send`, `zfs_send`, `zfs_send_one`): writes a replication
//! stream (`zetta::dmu_send`) to standard output.
//!
//! `send [-DLPRbcehnpvVw] [-i|-I snapshot] snapshot` and `send [-nvP] -t token`. The
//! stream is produced in chunks; in the daemon the pool is locked only while a chunk is
//! made, and the chunk is written to the client with the lock released, so `zfs send |
//! zfs receive` into the same pool takes turns instead of deadlocking, and a slow reader
//! holds no lock. `-n -v -P` prints the exact stream size in the lines syncoid reads
//! (`full`/`incremental` lines, then `size\t<bytes>`); `-v` prints the same estimate and
//! then a progress line per second on stderr.

use super::{pool_of, CommandIo};
use crate::daemon::registry;
use crate::zpool::pool::{self, Imported};
use crate::zpool::{fail, getopt, usage, CmdError, CmdResult, Ctx};
use std::time::{Duration, Instant};
use zetta::dmu_send::{
    plan_send, ResumeToken, SendError, SendOptions, SendRequest, Sender, SubstreamSpec,
};
use zetta::spa::Spa;
use zetta_zutil::nicenum::nicenum_space;

/// Bytes produced per pool visit.
const CHUNK_BYTES: usize = 4 << 20;
const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// A pool used in turns: in the daemon it is opened (locked) for each piece of work and
/// let go between; a command running on its own keeps its one import.
pub(super) struct PoolSession {
    name: String,
    held: Option<Imported>,
}

impl PoolSession {
    pub(super) fn new(name: &str) -> PoolSession {
        PoolSession {
            name: name.to_string(),
            held: None,
        }
    }

    pub(super) fn with<T>(&mut self, work: impl FnOnce(&mut Spa) -> T) -> Result<T, CmdError> {
        let mut imported = match self.held.take() {
            Some(imported) => imported,
            None => pool::open_pool(&self.name)?,
        };
        let result = work(&mut imported.spa);
        if registry::get().is_none() {
            self.held = Some(imported);
        }
        Ok(result)
    }

    /// Records the command in the pool's history and commits.
    pub(super) fn commit(&mut self, history: &str) -> CmdResult {
        let mut imported = match self.held.take() {
            Some(imported) => imported,
            None => pool::open_pool(&self.name)?,
        };
        imported.spa.log_history(history);
        pool::commit(&mut imported)
    }
}

fn send_fail(e: SendError) -> CmdError {
    CmdError::Fail(super::errors::send_error_text(&e))
}

/// `HH:MM:SS` of the local time, as OpenZFS's progress lines.
fn clock() -> String {
    let now = zetta::spa::now_secs() as i64;
    let text = zetta_zutil::nicenum::ctime(now);
    text.get(11..19).unwrap_or("00:00:00").to_string()
}

/// `zfs send …`
pub(super) fn cmd_send(args: &[String], io: &mut CommandIo<'_>, ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "DLPRbcehi:I:npst:vVw")?;
    let dry_run = parsed.has('n');
    let verbose = parsed.has('v') || parsed.has('P');
    let parsable = parsed.has('P');
    // zfs_do_send: a second -i or -I (the same twice too) is a bare usage error.
    if parsed.values('i').len() + parsed.values('I').len() > 1 {
        return usage("");
    }
    // zfs_do_send: -w is -Lce plus raw (RAW itself only for an encrypted dataset, which
    // Zetta has none of).
    let raw = parsed.has('w');
    let options = SendOptions {
        compressed: parsed.has('c') || raw,
        properties: parsed.has('p') || parsed.has('R'),
        holds: parsed.has('h'),
        backup: parsed.has('b'),
        skip_missing: parsed.has('s'),
        large_blocks: parsed.has('L') || raw,
        embed: parsed.has('e') || raw,
        raw,
    };
    if parsed.has('D') {
        ctx.warn(
            "WARNING: deduplicated send is no longer supported.  A regular,\n\
             non-deduplicated stream will be generated.\n\n",
        );
    }
    if let Some(token) = parsed.last('t') {
        // zfs_do_send: a token carries its own source and flags.
        if parsed.has('i')
            || parsed.has('I')
            || parsed.has('R')
            || parsed.has('p')
            || parsed.has('b')
            || parsed.has('h')
        {
            return usage("invalid flags combined with -t");
        }
        if !parsed.operands.is_empty() {
            return usage("too many arguments");
        }
        return send_resume(&token, io, ctx, dry_run, verbose, parsable);
    }
    let snapshot = match parsed.operands.as_slice() {
        [snapshot] => snapshot.clone(),
        [] => return usage("missing snapshot argument"),
        _ => return usage("too many arguments"),
    };
    if !dry_run && io.stdout_is_terminal {
        return fail(
            "Error: Stream can not be written to a terminal.\nYou must redirect standard output.",
        );
    }
    if !snapshot.contains('@') {
        return fail(format!(
            "cannot send '{snapshot}': sending a filesystem's current state is not supported; send a snapshot"
        ));
    }
    let request = SendRequest {
        to: snapshot.clone(),
        from: parsed.last('I').or_else(|| parsed.last('i')),
        intermediates: parsed.has('I'),
        replicate: parsed.has('R'),
        options,
    };
    let mut session = PoolSession::new(pool_of(&snapshot));
    let plan = session
        .with(|spa| plan_send(spa, &request))
        .map_err(|_| CmdError::Fail(format!("cannot open '{snapshot}': dataset does not exist")))?
        .map_err(send_fail)?;
    for warning in &plan.warnings {
        ctx.warn(&format!("{warning}\n"));
    }
    if plan.substreams.is_empty() {
        return Ok(());
    }
    if verbose {
        let mut lines = String::new();
        // A compound stream's header and its closing END count too: the total is the
        // exact size of the stream (syncoid's progress bar).
        let mut total = plan.header.as_ref().map_or(0, |h| {
            (h.len() + zetta::dmu_send::record::HEADER_SIZE_BYTES) as u64
        });
        for spec in &plan.substreams {
            let size = session
                .with(|spa| Sender::new(spa, spec.clone(), options)?.estimate(spa))?
                .map_err(send_fail)?;
            total += size;
            lines.push_str(&estimate_line(spec, size, parsable));
        }
        lines.push_str(&total_line(total, parsable));
        print_estimate(ctx, &lines, dry_run);
    }
    if dry_run {
        return Ok(());
    }
    if let Some(header) = &plan.header {
        write_out(ctx, header, &snapshot)?;
    }
    for spec in plan.substreams {
        let sender = session
            .with(|spa| Sender::new(spa, spec.clone(), options))?
            .map_err(send_fail)?;
        stream_out(&mut session, sender, ctx, verbose, parsable)?;
    }
    if plan.header.is_some() {
        // libzfs `send_conclusion_record`: an all-zero END closes a compound stream.
        write_out(
            ctx,
            &zetta::dmu_send::record::conclusion_record(),
            &snapshot,
        )?;
    }
    Ok(())
}

/// `zfs send -t token`: the rest of an interrupted stream.
fn send_resume(
    token: &str,
    io: &mut CommandIo<'_>,
    ctx: &mut Ctx,
    dry_run: bool,
    verbose: bool,
    parsable: bool,
) -> CmdResult {
    let token = ResumeToken::decode(token)
        .map_err(|why| CmdError::Fail(format!("cannot resume send: {why}")))?;
    if !dry_run && io.stdout_is_terminal {
        return fail(
            "Error: Stream can not be written to a terminal.\nYou must redirect standard output.",
        );
    }
    let mut session = PoolSession::new(pool_of(&token.to_name));
    let sender = session
        .with(|spa| Sender::resume(spa, &token))
        .map_err(|_| {
            CmdError::Fail(format!(
                "cannot resume send: '{}' does not exist",
                token.to_name
            ))
        })?
        .map_err(send_fail)?;
    if verbose {
        let spec = sender.spec().clone();
        let size = session
            .with(|spa| Sender::resume(spa, &token)?.estimate(spa))?
            .map_err(send_fail)?;
        let lines = format!(
            "{}{}",
            estimate_line(&spec, size, parsable),
            total_line(size, parsable)
        );
        print_estimate(ctx, &lines, dry_run);
    }
    if dry_run {
        return Ok(());
    }
    stream_out(&mut session, sender, ctx, verbose, parsable)
}

/// Estimates go to stdout for a dry run (what syncoid reads), else to stderr.
fn print_estimate(ctx: &mut Ctx, lines: &str, dry_run: bool) {
    if dry_run {
        ctx.print(lines);
    } else {
        ctx.warn(lines);
    }
}

fn estimate_line(spec: &SubstreamSpec, size: u64, parsable: bool) -> String {
    match (&spec.from, parsable) {
        (Some(from), true) => format!("incremental\t{from}\t{}\t{size}\n", spec.to),
        (None, true) => format!("full\t{}\t{size}\n", spec.to),
        (Some(from), false) => format!(
            "send from {from} to {} estimated size is {}\n",
            spec.to,
            nicenum_space(size)
        ),
        (None, false) => format!(
            "full send of {} estimated size is {}\n",
            spec.to,
            nicenum_space(size)
        ),
    }
}

fn total_line(total: u64, parsable: bool) -> String {
    if parsable {
        format!("size\t{total}\n")
    } else {
        format!("total estimated size is {}\n", nicenum_space(total))
    }
}

fn write_out(ctx: &mut Ctx, bytes: &[u8], name: &str) -> CmdResult {
    ctx.out
        .write_all(bytes)
        .and_then(|()| ctx.out.flush())
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                // The reader went away (`zfs send | head`): OpenZFS's zfs dies of SIGPIPE
                // without a word; so does this send, with status 1.
                return CmdError::Fail(String::new());
            }
            CmdError::Fail(format!(
                "warning: cannot send '{name}': {}",
                pool::strerror(&e)
            ))
        })
}

/// Produces one substream chunk by chunk and writes each with the pool let go.
fn stream_out(
    session: &mut PoolSession,
    mut sender: Sender,
    ctx: &mut Ctx,
    verbose: bool,
    parsable: bool,
) -> CmdResult {
    let name = sender.spec().to.clone();
    let mut buffer = Vec::with_capacity(CHUNK_BYTES + (1 << 20));
    let mut last_report = Instant::now();
    if verbose {
        ctx.warn(&if parsable {
            format!("TIME\tSENT\tSNAPSHOT {name}\n")
        } else {
            format!("TIME        SENT   SNAPSHOT {name}\n")
        });
    }
    loop {
        buffer.clear();
        let done = session
            .with(|spa| sender.fill(spa, &mut buffer, CHUNK_BYTES))?
            .map_err(send_fail)?;
        write_out(ctx, &buffer, &name)?;
        if verbose && (done || last_report.elapsed() >= PROGRESS_INTERVAL) {
            last_report = Instant::now();
            let sent = sender.bytes();
            ctx.warn(&if parsable {
                format!("{}\t{sent}\t{name}\n", clock())
            } else {
                format!("{}   {:>5}   {name}\n", clock(), nicenum_space(sent))
            });
        }
        if done {
            return Ok(());
        }
    }
}
