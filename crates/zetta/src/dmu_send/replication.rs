//! Which substreams a `zfs send` command line stands for (OpenZFS `libzfs_sendrecv.c`:
//! `zfs_send`, `dump_filesystems`, `send_iterate_fs`).
//!
//! - `send fs@s`: one full substream. `-i a fs@s`: one incremental (from a snapshot or a
//!   bookmark). `-I a fs@s`: one incremental per snapshot after `a` up to `s`, in order, so
//!   a receiver ends up with every intermediate snapshot. For a clone, `a` may be its
//!   origin (a snapshot of another filesystem): the first substream is then a clone stream.
//! - `-R fs@s`: a replication stream. First a package header (`send_prelim`: a compound
//!   BEGIN whose nvlist lists every filesystem sent, in libzfs's shape, and an END), then,
//!   for the filesystem and each descendant that has `@s` (parents before children, clones
//!   after their origin's filesystem; one created after `@s` is left out with its
//!   children): a full substream of its oldest snapshot (or, for a clone whose origin is
//!   in the stream, an incremental from the origin) and one incremental per later snapshot
//!   up to `@s`. With `-I a`/`-i a`, filesystems that have `@a` send only what follows it.
//! - `-I` (without `-R`) is a compound stream too, as libzfs's `zfs_send` writes it (its
//!   header without an nvlist), and so are `-p`/`-h` (libzfs's `zfs_send_one`: a header
//!   with `not_recursive` and the one filesystem). The CLI closes every compound stream
//!   with libzfs's all-zero END.

use super::error::SendError;
use super::send::{find_point, SendOptions, SubstreamSpec};
use super::send_prelim::{prelim_records, PrelimRequest};
use crate::spa::Spa;

/// A `zfs send` command line, names as given.
#[derive(Clone, Debug, Default)]
pub struct SendRequest {
    /// `pool/fs@snap`.
    pub to: String,
    /// `-i`/`-I` argument: `@a`, `a`, `pool/fs@a`, `#mark` or `pool/fs#mark`.
    pub from: Option<String>,
    /// `-I`.
    pub intermediates: bool,
    /// `-R`.
    pub replicate: bool,
    pub options: SendOptions,
}

/// What to send, in order.
#[derive(Clone, Debug, Default)]
pub struct SendPlan {
    /// A replication stream's package header, a complete substream.
    pub header: Option<Vec<u8>>,
    pub substreams: Vec<SubstreamSpec>,
    /// Lines for stderr (libzfs's warnings): `-Rs` skipping a descendant.
    pub warnings: Vec<String>,
}

fn missing(name: &str) -> SendError {
    SendError::NoSuchDataset {
        name: name.to_string(),
    }
}

/// The full name of an incremental source given relative to `fs`.
pub fn source_name(fs: &str, from: &str) -> String {
    if from.starts_with(['@', '#']) {
        format!("{fs}{from}")
    } else if from.contains(['@', '#']) {
        from.to_string()
    } else {
        format!("{fs}@{from}")
    }
}

fn spec(to: &str, from: Option<String>, clone: bool) -> SubstreamSpec {
    SubstreamSpec {
        to: to.to_string(),
        from,
        clone,
    }
}

/// Snapshots of `fs` (names) created after `after_txg` up to and including `to_txg`.
fn snapshots_between(
    spa: &mut Spa,
    fs: &str,
    after_txg: u64,
    to_txg: u64,
) -> Result<Vec<String>, SendError> {
    Ok(spa
        .snapshots(fs)?
        .into_iter()
        .filter(|(_, _, phys)| phys.creation_txg > after_txg && phys.creation_txg <= to_txg)
        .map(|(name, _, _)| name)
        .collect())
}

/// Incrementals from `from` to `to` (one, or one per snapshot between with `-I`).
fn chain(
    spa: &mut Spa,
    fs: &str,
    from: &str,
    to: &str,
    intermediates: bool,
) -> Result<Vec<SubstreamSpec>, SendError> {
    if !intermediates {
        return Ok(vec![spec(to, Some(from.to_string()), false)]);
    }
    let (_, from_txg, _) = find_point(spa, from)?.ok_or_else(|| missing(from))?;
    let (_, to_txg, _) = find_point(spa, to)?.ok_or_else(|| missing(to))?;
    if from_txg >= to_txg {
        return Err(SendError::NotEarlier { to: to.to_string() });
    }
    let mut out = Vec::new();
    let mut previous = from.to_string();
    for next in snapshots_between(spa, fs, from_txg, to_txg)? {
        out.push(spec(&next, Some(previous), false));
        previous = next;
    }
    Ok(out)
}

/// `-i origin clone@s` (one clone substream) or `-I origin clone@s` (a clone substream to
/// the clone's first snapshot, then one incremental per snapshot up to `s`): OpenZFS lets
/// the origin snapshot of a clone be its incremental source, and syncoid `-r` sends clones
/// that way.
fn from_origin(
    spa: &mut Spa,
    fs: &str,
    origin: &str,
    to: &str,
    intermediates: bool,
) -> Result<Vec<SubstreamSpec>, SendError> {
    if !intermediates {
        return Ok(vec![spec(to, Some(origin.to_string()), true)]);
    }
    let (_, to_txg, _) = find_point(spa, to)?.ok_or_else(|| missing(to))?;
    let mut out = Vec::new();
    let mut previous = origin.to_string();
    for next in snapshots_between(spa, fs, 0, to_txg)? {
        let clone = out.is_empty();
        out.push(spec(&next, Some(previous), clone));
        previous = next;
    }
    Ok(out)
}

/// The substreams (and header) of a send request.
pub fn plan_send(spa: &mut Spa, request: &SendRequest) -> Result<SendPlan, SendError> {
    // A pool another implementation wrote with features Zetta does not maintain is held by
    // the read-only reader (`spa::openzfs`), not by the engine the send path walks.
    if spa.openzfs().is_some() {
        return Err(SendError::ForeignPool {
            to: request.to.clone(),
        });
    }
    let Some((fs, snap)) = request.to.split_once('@') else {
        return Err(SendError::NotSnapshot {
            name: request.to.clone(),
        });
    };
    if !request.replicate {
        let mut from_snap = None;
        let substreams = match &request.from {
            None => vec![spec(&request.to, None, false)],
            Some(from) => {
                let from = source_name(fs, from);
                if spa.origin_of(fs)?.as_deref() == Some(from.as_str()) {
                    from_origin(spa, fs, &from, &request.to, request.intermediates)?
                } else {
                    from_snap = from
                        .strip_prefix(fs)
                        .and_then(|rest| rest.strip_prefix('@'))
                        .map(str::to_string);
                    chain(spa, fs, &from, &request.to, request.intermediates)?
                }
            }
        };
        // libzfs: `-I` goes through `zfs_send` (a compound stream, its nvlist only with
        // -p/-h); `-p`/`-h` alone through `zfs_send_one`, whose header names no source.
        let options = &request.options;
        let gather_props = options.properties || options.holds || options.backup;
        let header = if request.intermediates || gather_props {
            Some(prelim_records(
                spa,
                &PrelimRequest {
                    to: request.to.clone(),
                    from_snap: from_snap.filter(|_| request.intermediates),
                    recursive: false,
                    doall: request.intermediates,
                    gather_props,
                    props: options.properties,
                    backup: options.backup,
                    holds: options.holds,
                    raw: options.raw,
                },
            )?)
        } else {
            None
        };
        return Ok(SendPlan {
            header,
            substreams,
            warnings: Vec::new(),
        });
    }
    replicate(spa, request, fs, snap)
}

/// Filesystems to send with `-R`: `top` and descendants, parents first, clones after the
/// filesystem of their origin.
fn replication_order(spa: &mut Spa, top: &str) -> Result<Vec<(String, Option<String>)>, SendError> {
    let mut pending = Vec::new();
    for name in spa.dataset_names()? {
        if (name == top || name.starts_with(&format!("{top}/"))) && !name.contains('%') {
            let origin = spa.origin_of(&name)?;
            pending.push((name, origin));
        }
    }
    let names: Vec<String> = pending.iter().map(|(n, _)| n.clone()).collect();
    let mut ordered: Vec<(String, Option<String>)> = Vec::new();
    while !pending.is_empty() {
        let done = |name: &str, ordered: &[(String, Option<String>)]| {
            ordered.iter().any(|(n, _)| n == name)
        };
        let ready = pending.iter().position(|(name, origin)| {
            let parent_ok = name == top
                || name
                    .rsplit_once('/')
                    .is_none_or(|(parent, _)| done(parent, &ordered));
            let origin_fs = origin.as_deref().map(|o| o.split('@').next().unwrap_or(o));
            let origin_ok =
                origin_fs.is_none_or(|o| !names.iter().any(|n| n == o) || done(o, &ordered));
            parent_ok && origin_ok
        });
        ordered.push(pending.remove(ready.unwrap_or(0)));
    }
    Ok(ordered)
}

fn replicate(
    spa: &mut Spa,
    request: &SendRequest,
    top: &str,
    snap: &str,
) -> Result<SendPlan, SendError> {
    let from_snap = match &request.from {
        Some(from) if from.contains('#') => return Err(SendError::BookmarkReplicationSource),
        Some(from) => Some(
            source_name(top, from)
                .split_once('@')
                .map(|(_, s)| s.to_string())
                .unwrap_or_default(),
        ),
        None => None,
    };
    let (_top_guid, top_txg, _top_time) =
        find_point(spa, &request.to)?.ok_or_else(|| missing(&request.to))?;
    let ordered = replication_order(spa, top)?;
    let sent: Vec<String> = ordered.iter().map(|(n, _)| n.clone()).collect();
    let mut substreams = Vec::new();
    // Filesystems created after the snapshot, left out with their children (libzfs
    // `send_iterate_fs` returns before iterating them).
    let mut skipped: Vec<String> = Vec::new();
    let mut warnings = Vec::new();
    for (fs, origin) in ordered {
        if skipped.iter().any(|s| fs.starts_with(&format!("{s}/"))) {
            continue;
        }
        let to = format!("{fs}@{snap}");
        let Some((_, to_txg, _)) = find_point(spa, &to)? else {
            let dataset = spa.lookup_dataset(&fs)?.unwrap_or(0);
            if spa.dataset_phys(dataset)?.creation_txg > top_txg {
                skipped.push(fs);
                continue;
            }
            if request.options.skip_missing {
                warnings.push(format!(
                    "WARNING: skipping dataset {fs} and its children: snapshot {snap} does not exist"
                ));
                skipped.push(fs);
                continue;
            }
            return Err(SendError::MissingInDescendant {
                snapshot: format!("{top}@{snap}"),
                missing: to,
            });
        };
        let included: Vec<(String, u64)> = spa
            .snapshots(&fs)?
            .into_iter()
            .filter(|(_, _, phys)| phys.creation_txg <= to_txg)
            .map(|(name, _, phys)| (name, phys.guid))
            .collect();
        let base = from_snap
            .as_ref()
            .map(|s| format!("{fs}@{s}"))
            .filter(|name| included.iter().any(|(n, _)| n == name));
        match base {
            Some(base) => substreams.extend(chain(spa, &fs, &base, &to, request.intermediates)?),
            None => {
                let origin_guid = match &origin {
                    Some(o) if sent.iter().any(|n| Some(n.as_str()) == o.split('@').next()) => {
                        find_point(spa, o)?.map(|(guid, _, _)| (o.clone(), guid))
                    }
                    _ => None,
                };
                let mut previous: Option<String> = None;
                for (name, _) in &included {
                    let from = previous
                        .clone()
                        .or_else(|| origin_guid.as_ref().map(|(o, _)| o.clone()));
                    let clone = previous.is_none() && origin_guid.is_some();
                    substreams.push(spec(name, from, clone));
                    previous = Some(name.clone());
                }
            }
        }
    }
    let header = prelim_records(
        spa,
        &PrelimRequest {
            to: request.to.clone(),
            from_snap: from_snap.clone(),
            recursive: true,
            doall: request.intermediates || request.from.is_none(),
            gather_props: true,
            props: true,
            backup: request.options.backup,
            holds: request.options.holds,
            raw: request.options.raw,
        },
    )?;
    Ok(SendPlan {
        header: Some(header),
        substreams,
        warnings,
    })
}
