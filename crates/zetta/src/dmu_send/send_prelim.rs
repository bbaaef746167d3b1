//! The package header of a compound stream, as libzfs writes it (OpenZFS 2.3
//! `libzfs_sendrecv.c`: `send_prelim_records`, `gather_nvlist`, `send_iterate_fs`,
//! `send_iterate_snap`, `send_iterate_prop`).
//!
//! Theory. `zfs send -R`, `-I`, `-p`, `-h` (and `-b`) wrap their substreams in a compound
//! stream: a BEGIN of header type `DMU_COMPOUNDSTREAM` (no guids, no time, objset type 0,
//! `drr_toname` the snapshot named on the command line, feature bits SA_SPILL for a ZPL
//! filesystem and HOLDS with `-h`) whose payload is an XDR nvlist, an END carrying the
//! checksum of that BEGIN, the substreams, and an all-zero END. The nvlist is present only
//! when properties are gathered (`-R`, `-p`, `-b`, `-h`): a bare `-I` sends the header without
//! one. Its pairs, in libzfs's order:
//!
//! ```text
//! fromsnap       string   short name of the incremental source (not for -p -i: libzfs's
//!                         zfs_send_one passes none; not for -I from a clone's origin)
//! tosnap         string   short name of the snapshot sent
//! not_recursive  boolean  without -R
//! fss            nvlist   "0x<fs guid, %llx>" -> per filesystem:
//!     name            string  pool/fs
//!     parentfromsnap  uint64  guid of the parent's @fromsnap, else its @tosnap, else 0
//!     origin          uint64  guid of a clone's origin snapshot
//!     props           nvlist  the filesystem's local or received values (-R, -p):
//!                             index and number properties as uint64, others as string
//!     snaps           nvlist  short name -> guid
//!     snapprops       nvlist  short name -> nvlist of the snapshot's own properties
//!     snapholds       nvlist  short name -> nvlist tag -> time (-h)
//! ```
//!
//! Which snapshots are listed (`send_iterate_snap`): with `-R`, every snapshot of the
//! filesystem up to its `@tosnap` (or up to the parent's, for a child without one); with
//! `-I`, those from the source through `@tosnap` (the source itself in `snaps` only);
//! otherwise `@tosnap` alone. With `-R`, a descendant without `@tosnap` created after the
//! parent's `@tosnap` is left out with its children; one created before is an error (the
//! planner's `MissingInDescendant`).
//!
//! `raw` (a boolean after `not_recursive`) is there with `-w`. Left out on purpose:
//! `is_encroot` (Zetta has no encryption). With `-b` (`backup`) `props` and `snapprops`
//! carry received values only, and `props` is listed even without `-p`.

use super::error::SendError;
use super::record::{Record, RecordWriter, FEATURE_HOLDS, FEATURE_SA_SPILL};
use super::send::find_point;
use crate::nvpair_xdr::{self, XdrNvList, XdrValue};
use crate::spa::Spa;
use crate::types::Guid;

/// What the command line asks the header to carry.
#[derive(Clone, Debug, Default)]
pub(super) struct PrelimRequest {
    /// `tofs@tosnap`, the snapshot named on the command line.
    pub to: String,
    /// Short name of the incremental source as libzfs records it (see the module header).
    pub from_snap: Option<String>,
    /// `-R`: the filesystem and its descendants.
    pub recursive: bool,
    /// `-I` (or `-R` without a source): every snapshot in range.
    pub doall: bool,
    /// The nvlist is gathered (`-R`, `-p`, `-h`).
    pub gather_props: bool,
    /// `-p` or `-R`: `props` per filesystem.
    pub props: bool,
    /// `-b`: only received values, in `props` (listed then even without `-p`) and in
    /// `snapprops` (libzfs `send_iterate_prop`'s `received_only`).
    pub backup: bool,
    /// `-h`.
    pub holds: bool,
    /// `-w`: the nvlist says `raw`.
    pub raw: bool,
}

/// One snapshot of a filesystem: short name, guid, creation txg.
type Snap = (String, u64, u64);

fn short(name: &str) -> &str {
    name.split_once('@').map_or(name, |(_, s)| s)
}

fn snaps_of(spa: &mut Spa, fs: &str) -> Result<Vec<Snap>, SendError> {
    Ok(spa
        .snapshots(fs)?
        .into_iter()
        .map(|(name, _, phys)| (short(&name).to_string(), phys.guid, phys.creation_txg))
        .collect())
}

/// A property value as libzfs's `send_iterate_prop` adds it: user properties and string
/// properties as strings, index and number properties as uint64.
pub(super) fn prop_value(name: &str, value: &str) -> XdrValue {
    if !name.contains(':') {
        if let Some(number) = crate::dsl::openzfs::index::number_of(name, value) {
            return XdrValue::Uint64(number);
        }
        let is_number = zetta_zprop::ZfsProp::from_name(name)
            .is_some_and(|p| matches!(p.desc().kind, zetta_zprop::zfs_prop::PropType::Number));
        if let (true, Ok(number)) = (is_number, value.parse::<u64>()) {
            return XdrValue::Uint64(number);
        }
    }
    XdrValue::String(value.as_bytes().to_vec())
}

fn props_nvlist(props: &[(String, String)]) -> XdrNvList {
    let mut out = XdrNvList::new();
    for (name, value) in props {
        out.add(name, prop_value(name, value));
    }
    out
}

/// The filesystems the header lists, parents before children (`send_iterate_fs`'s
/// pre-order): `top` alone, or with `recursive` its descendants too.
fn filesystems(spa: &mut Spa, top: &str, recursive: bool) -> Result<Vec<String>, SendError> {
    if !recursive {
        return Ok(vec![top.to_string()]);
    }
    let mut names: Vec<String> = spa
        .dataset_names()?
        .into_iter()
        .filter(|n| (n == top || n.starts_with(&format!("{top}/"))) && !n.contains('%'))
        .collect();
    names.sort_by(|a, b| a.split('/').cmp(b.split('/')));
    Ok(names)
}

/// The header's nvlist (`None` when libzfs sends none).
fn gather(spa: &mut Spa, request: &PrelimRequest) -> Result<Option<XdrNvList>, SendError> {
    if !request.gather_props {
        return Ok(None);
    }
    let (top, tosnap) = request
        .to
        .split_once('@')
        .ok_or_else(|| SendError::NotSnapshot {
            name: request.to.clone(),
        })?;
    let from = request.from_snap.as_deref();
    let snap_props = spa.snapshot_props()?;
    let mut fss = XdrNvList::new();
    // Per filesystem listed: (name, its tosnap txg in force, the guid children record as
    // parentfromsnap).
    let mut listed: Vec<(String, u64, u64)> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    for fs in filesystems(spa, top, request.recursive)? {
        let parent = fs.rsplit_once('/').map(|(p, _)| p.to_string());
        if skipped.iter().any(|s| fs.starts_with(&format!("{s}/"))) {
            continue;
        }
        let inherited = parent
            .as_ref()
            .and_then(|p| listed.iter().find(|(n, _, _)| n == p))
            .map(|(_, txg, guid)| (*txg, *guid));
        let snaps = snaps_of(spa, &fs)?;
        let own_to = snaps.iter().find(|(s, _, _)| s == tosnap);
        let tosnap_txg = match own_to {
            Some((_, _, txg)) => *txg,
            None => {
                // The planner already refused a descendant older than the parent's
                // snapshot; a newer one is left out with its children.
                if fs != top {
                    skipped.push(fs.clone());
                    continue;
                }
                return Err(SendError::NoSuchDataset {
                    name: request.to.clone(),
                });
            }
        };
        let from_txg = from
            .and_then(|f| snaps.iter().find(|(s, _, _)| s == f))
            .map(|(_, _, txg)| *txg);
        // Which snapshots `send_iterate_snap` visits, and which of them get snapprops.
        let in_range: Vec<&Snap> = snaps
            .iter()
            .filter(|(s, _, txg)| {
                if request.recursive {
                    *txg <= tosnap_txg
                } else if request.doall {
                    from_txg.is_none_or(|f| *txg >= f) && *txg <= tosnap_txg
                } else {
                    s == tosnap
                }
            })
            .collect();
        // `-I` without `-R` skips the source itself (`seenfrom`).
        let with_props: Vec<&Snap> = in_range
            .iter()
            .copied()
            .filter(|(s, _, _)| request.recursive || !request.doall || from != Some(s.as_str()))
            .collect();
        // parentfromsnap of this filesystem's children: its @fromsnap, else its @tosnap.
        let child_parent_guid = in_range
            .iter()
            .find(|(s, _, _)| Some(s.as_str()) == from)
            .or_else(|| in_range.iter().find(|(s, _, _)| s == tosnap))
            .map_or(0, |(_, guid, _)| *guid);
        let dataset = spa
            .lookup_dataset(&fs)?
            .ok_or_else(|| SendError::NoSuchDataset { name: fs.clone() })?;
        let fs_guid = spa.dataset_phys(dataset)?.guid;

        let mut nvfs = XdrNvList::new();
        nvfs.add("name", XdrValue::String(fs.as_bytes().to_vec()));
        let parent_from = if request.recursive {
            inherited.map_or(0, |(_, guid)| guid)
        } else {
            0
        };
        nvfs.add("parentfromsnap", XdrValue::Uint64(parent_from));
        if let Some(origin) = spa.origin_of(&fs)? {
            if let Some((guid, _, _)) = find_point(spa, &origin)? {
                nvfs.add("origin", XdrValue::Uint64(guid));
            }
        }
        if request.props || request.backup || request.recursive {
            let props = if request.backup {
                spa.own_received_props(&fs)?
            } else {
                spa.own_effective_props(&fs)?
            };
            nvfs.add("props", XdrValue::NvList(props_nvlist(&props)));
        }
        let mut snaps_nv = XdrNvList::new();
        for (s, guid, _) in &in_range {
            snaps_nv.add(s, XdrValue::Uint64(*guid));
        }
        let mut snapprops = XdrNvList::new();
        let mut snapholds = XdrNvList::new();
        for (s, _, _) in &with_props {
            let full = format!("{fs}@{s}");
            let entries: Vec<(String, String)> = snap_props
                .iter()
                .filter(|(name, _, _)| *name == full)
                .map(|(_, entry, value)| (entry.clone(), value.clone()))
                .collect();
            let own = if request.backup {
                crate::dsl::received_entries(&entries)
            } else {
                crate::dsl::effective_entries(&entries)
            };
            snapprops.add(s, XdrValue::NvList(props_nvlist(&own)));
            if request.holds {
                let mut holds = XdrNvList::new();
                for (tag, time) in spa.holds(&full)? {
                    holds.add(&tag, XdrValue::Uint64(time));
                }
                snapholds.add(s, XdrValue::NvList(holds));
            }
        }
        nvfs.add("snaps", XdrValue::NvList(snaps_nv));
        nvfs.add("snapprops", XdrValue::NvList(snapprops));
        if request.holds {
            nvfs.add("snapholds", XdrValue::NvList(snapholds));
        }
        fss.add(&format!("{:#x}", fs_guid), XdrValue::NvList(nvfs));
        listed.push((fs, tosnap_txg, child_parent_guid));
    }
    let mut header = XdrNvList::new();
    if let Some(from) = from {
        header.add("fromsnap", XdrValue::String(from.as_bytes().to_vec()));
    }
    header.add("tosnap", XdrValue::String(tosnap.as_bytes().to_vec()));
    if !request.recursive {
        header.add("not_recursive", XdrValue::Boolean);
    }
    if request.raw {
        header.add("raw", XdrValue::Boolean);
    }
    header.add("fss", XdrValue::NvList(fss));
    Ok(Some(header))
}

/// The compound stream's BEGIN and END (libzfs `send_prelim_records`).
pub(super) fn prelim_records(spa: &mut Spa, request: &PrelimRequest) -> Result<Vec<u8>, SendError> {
    let (tofs, _) = request
        .to
        .split_once('@')
        .ok_or_else(|| SendError::NotSnapshot {
            name: request.to.clone(),
        })?;
    let mut features = 0;
    // ZPL filesystems of version 5 (SA) and later; a version-23 pool's are ZPL 4.
    if !spa.is_volume(tofs)?
        && crate::zpl::zpl_version_for_spa(spa.version()) >= crate::zpl::ZPL_VERSION_SA
    {
        features |= FEATURE_SA_SPILL;
    }
    if request.holds {
        features |= FEATURE_HOLDS;
    }
    let payload = match gather(spa, request)? {
        // Only names and values taken from the pool; packing cannot fail on them.
        Some(list) => nvpair_xdr::pack(&list).unwrap_or_default(),
        None => Vec::new(),
    };
    let mut out = Vec::new();
    let mut writer = RecordWriter::new();
    writer.emit_compound_begin(&mut out, &request.to, features, payload);
    writer.emit_record(&mut out, &Record::End { to_guid: Guid(0) });
    // libzfs writes this END with `send_conclusion_record`, not `dump_record`: only its
    // `drr_end.drr_checksum` is set, its own `drr_checksum` stays zero.
    let len = out.len();
    out[len - 32..].fill(0);
    Ok(out)
}
