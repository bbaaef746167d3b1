//! What a receive decides and does at the dataset level (OpenZFS `dmu_recv_begin_check`,
//! `dmu_recv_end_sync` and the name handling of libzfs `zfs_receive_one`): at BEGIN, which
//! dataset the stream lands in and whether it may (the refusals, in OpenZFS's words); at
//! END, the commit — later snapshots destroyed and the head rolled back under `-F`, the
//! work dataset swapped in, the snapshot taken with the sender's guid and creation time,
//! properties and holds applied.
//! Where a receive's state lives and who is receiving is in `recv_state`.

use super::error::{RecvContext, RecvError, RecvRefusal, StreamError};
use super::record::{BeginRecord, FEATURE_RESUMING};
use super::recv::{
    Failure, Mode, NameMode, Receiver, RecvEvent, Substream, RECV_CHILD_NAME, RECV_STATE_PROP,
};
use super::recv_state::{active_key, claim_active, is_active, recv_state};
use super::token::ResumeToken;
use crate::nvlist::{NvList, NvValue};
use crate::spa::{Spa, SpaError};
use crate::types::Guid;

/// Property (name, stored value) pairs.
type Props = Vec<(String, String)>;

/// Maps a pool error to the receive error of a substream.
fn pool_error(context: RecvContext) -> impl Fn(SpaError) -> RecvError + Copy {
    move |error| RecvError::Pool { context, error }
}

/// A refusal of a substream.
fn refusal(context: RecvContext) -> impl Fn(RecvRefusal) -> RecvError + Copy {
    move |why| RecvError::Refused { context, why }
}

/// Whether a filesystem or snapshot exists (libzfs `zfs_dataset_exists`).
fn dataset_exists(spa: &mut Spa, name: &str) -> Result<bool, SpaError> {
    let fs = name.split('@').next().unwrap_or(name);
    if spa.lookup_dir(fs)?.is_none() {
        return Ok(false);
    }
    if !name.contains('@') {
        return Ok(true);
    }
    Ok(spa.snapshots(fs)?.iter().any(|(n, _, _)| n == name))
}

/// A name a received dataset may have: components of letters, digits and `-_.: `, no `%`.
fn valid_name(name: &str) -> bool {
    let (fs, snap) = match name.split_once('@') {
        Some((fs, snap)) => (fs, Some(snap)),
        None => (name, None),
    };
    let component_ok = |c: &str| {
        !c.is_empty()
            && c.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.: ".contains(ch))
    };
    name.len() < 256 && fs.split('/').all(component_ok) && snap.is_none_or(component_ok)
}

impl Receiver {
    /// The destination snapshot of a sent snapshot `to_name` (sent from `sendfs`).
    pub(super) fn destination(&self, to_name: &str, sendfs: &str) -> Result<String, RecvError> {
        let target = &self.target;
        let refuse = refusal(RecvContext::Receive);
        let suffix = match self.options.name_mode {
            NameMode::Exact if target.contains('@') => {
                if self.compound.is_some() && self.compound_recursive {
                    return Err(refuse(RecvRefusal::SnapshotNameForMultiSnapshot));
                }
                return Ok(target.clone());
            }
            NameMode::Exact => to_name
                .strip_prefix(sendfs)
                .filter(|rest| rest.starts_with(['/', '@']))
                .map(str::to_string)
                .ok_or_else(|| refuse(RecvRefusal::InvalidName))?,
            _ if target.contains('@') => {
                let flag = if self.options.name_mode == NameMode::DiscardFirst {
                    'd'
                } else {
                    'e'
                };
                return Err(refuse(RecvRefusal::SnapshotWithNameMode { flag }));
            }
            NameMode::DiscardFirst => match to_name.find('/') {
                Some(at) => to_name[at..].to_string(),
                None => to_name[to_name.find('@').unwrap_or(to_name.len())..].to_string(),
            },
            NameMode::LastElement => match sendfs.rfind('/') {
                Some(at) => to_name.get(at..).unwrap_or_default().to_string(),
                None => format!("/{to_name}"),
            },
        };
        let dest = format!("{target}{suffix}");
        if !valid_name(&dest) || !dest.contains('@') {
            return Err(refuse(RecvRefusal::InvalidName));
        }
        Ok(dest)
    }

    /// Properties of the received filesystem: the stream's (minus `-x`; `None` when the
    /// stream carries none), to be stored as received values, and `-o`'s, stored locally.
    /// The package header's entry for the filesystem of snapshot `to_guid` and the
    /// snapshot's short name there (libzfs `fsavl_find`), else the entry named `to_fs`.
    fn header_entry(&self, to_guid: Guid, to_fs: &str) -> Option<(&NvList, Option<String>)> {
        let (_, fss) = self.compound.as_ref()?;
        for fs in fss {
            if let Some(snaps) = fs.get_list("snaps") {
                for (short, value) in &snaps.entries {
                    if *value == NvValue::U64(to_guid.0) {
                        return Some((fs, Some(short.clone())));
                    }
                }
            }
        }
        fss.iter()
            .find(|fs| fs.get_str("name") == Some(to_fs))
            .map(|fs| (fs, None))
    }

    /// The holds the stream carries for this substream's snapshot: libzfs's `snapholds`
    /// of the header, or a Zetta stream's `holds` in the BEGIN (before version 4).
    fn holds_for(&self, begin: &BeginRecord, to_fs: &str) -> Vec<String> {
        if self.options.skip_holds {
            return Vec::new();
        }
        if let Some(holds) = begin.info.get_list("holds") {
            return holds.entries.keys().cloned().collect();
        }
        self.header_entry(begin.to_guid, to_fs)
            .and_then(|(fs, short)| fs.get_list("snapholds")?.get_list(&short?).cloned())
            .map(|holds| holds.entries.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn props_for(&self, begin: &BeginRecord, to_fs: &str) -> (Option<Props>, Props) {
        let from_header = self
            .header_entry(begin.to_guid, to_fs)
            .and_then(|(fs, _)| fs.get_list("props"));
        let carried = begin.info.get_list("props").or(from_header);
        let mut out: Vec<(String, String)> = carried.map(props_of).unwrap_or_default();
        out.retain(|(name, _)| !self.options.exclude_props.contains(name));
        for (name, _) in &self.options.set_props {
            out.retain(|(n, _)| n != name);
        }
        (carried.map(|_| out), self.options.set_props.clone())
    }

    /// The header's `snapprops` for this substream's snapshot: applied as received values
    /// after the snapshot is made, as libzfs's `zfs_receive_one` does (`ZFS_IOC_SET_PROP`
    /// with `received`, no `-o`/`-x` filtering); only user properties can be set on a
    /// snapshot.
    fn snap_props_for(&self, begin: &BeginRecord, to_fs: &str) -> Option<Props> {
        let (fs, short) = self.header_entry(begin.to_guid, to_fs)?;
        let props = fs.get_list("snapprops")?.get_list(&short?)?;
        let mut out = props_of(props);
        out.retain(|(name, _)| name.contains(':'));
        Some(out)
    }

    pub(super) fn begin(&mut self, spa: &mut Spa, begin: BeginRecord) -> Result<(), RecvError> {
        if begin.compound {
            if self.substreams > 0 || self.compound.is_some() {
                let error = StreamError::OutOfOrder {
                    seq: 0,
                    why: "a replication header inside the stream".to_string(),
                };
                return Err(self.fail(spa, Failure::Stream(error)));
            }
            let to_name = begin.info.get_str("toname").unwrap_or_default();
            let sendfs = begin
                .info
                .get_str("sendfs")
                .unwrap_or_else(|| to_name.split('@').next().unwrap_or(to_name))
                .to_string();
            // libzfs's `fss` is an nvlist keyed by `0x<guid>`; Zetta before stream
            // version 4 wrote an array of the same nvlists.
            let fss: Vec<NvList> = match begin.info.entries.get("fss") {
                Some(NvValue::List(by_guid)) => by_guid
                    .entries
                    .values()
                    .filter_map(|v| match v {
                        NvValue::List(fs) => Some(fs.clone()),
                        _ => None,
                    })
                    .collect(),
                Some(NvValue::ListArray(array)) => array.clone(),
                _ => Vec::new(),
            };
            let recursive = !begin.info.entries.contains_key("not_recursive");
            let tosnap = begin.info.get_str("tosnap").unwrap_or_default();
            let incremental = !begin
                .info
                .get_str("fromsnap")
                .unwrap_or_default()
                .is_empty();
            // Applied at the header's END, once its checksum has verified.
            // libzfs `zfs_receive_package`: `recv_incremental_replication` only for a
            // recursive stream with a source.
            self.destroy_unsent_at = (incremental
                && recursive
                && self.options.force
                && !self.options.dry_run
                && !tosnap.is_empty())
            .then(|| tosnap.to_string());
            self.compound_recursive = recursive;
            self.compound = Some((sendfs, fss));
            self.compound_open = true;
            return Ok(());
        }
        if self.options.name_mode != NameMode::Exact && self.substreams == 0 {
            let exists =
                dataset_exists(spa, &self.target).map_err(pool_error(RecvContext::Receive))?;
            if !exists {
                return Err(RecvError::Refused {
                    context: RecvContext::Receive,
                    why: RecvRefusal::TargetMissing {
                        target: self.target.clone(),
                    },
                });
            }
        }
        let to_name = begin.info.get_str("toname").unwrap_or_default().to_string();
        let to_fs = to_name.split('@').next().unwrap_or_default().to_string();
        let resuming = begin.features & FEATURE_RESUMING != 0;
        let clone = begin.is_clone();
        let wants_new = begin.from_guid.0 == 0 || clone;
        let context = if resuming {
            RecvContext::Resume
        } else if wants_new {
            RecvContext::NewFilesystem
        } else {
            RecvContext::Incremental
        };
        let sendfs = match &self.compound {
            Some((sendfs, _)) => sendfs.clone(),
            None => to_fs.clone(),
        };
        let dest_snap = self.destination(&to_name, &sendfs)?;
        let dest_fs = dest_snap.split('@').next().unwrap_or_default().to_string();
        let holds = self.holds_for(&begin, &to_fs);
        let snap_props = self.snap_props_for(&begin, &to_fs);
        let (received_props, local_props) = self.props_for(&begin, &to_fs);
        let mut sub = Substream {
            received_props,
            local_props,
            begin,
            to_name: to_name.clone(),
            context,
            dest_fs: dest_fs.clone(),
            dest_snap: dest_snap.clone(),
            work: dest_fs.clone(),
            base: None,
            mode: if self.options.dry_run {
                Mode::DryRun
            } else {
                Mode::Apply
            },
            holds,
            snap_props,
            pending: None,
            last_object: 0,
            data_pos: (0, 0),
            object_run: false,
            seq: 0,
            position: (0, 0),
            start_offset: self.parser.last_record_offset_bytes(),
            base_bytes: 0,
            unsynced_bytes: 0,
            active_key: None,
        };
        let (pool, refuse) = (pool_error(context), refusal(context));
        let state = recv_state(spa, &dest_fs).map_err(pool)?;
        if let Some((work, _)) = &state {
            if is_active(&active_key(spa, work)) {
                return Err(refuse(RecvRefusal::Busy));
            }
        }
        if resuming {
            self.begin_resume(spa, &mut sub, state)?;
        } else {
            match state {
                Some((_, value)) if !value.is_empty() => {
                    return Err(refuse(RecvRefusal::PartialStateExists { dest_fs }));
                }
                Some((work, _)) if sub.mode == Mode::Apply => {
                    // Debris of a receive that did not finish (the process died).
                    spa.destroy_filesystem(&work).map_err(pool)?;
                }
                _ => {}
            }
            if wants_new {
                self.begin_new(spa, &mut sub)?;
            } else {
                self.begin_incremental(spa, &mut sub)?;
            }
        }
        if sub.mode == Mode::Apply {
            let key = active_key(spa, &sub.work);
            if !claim_active(&key) {
                return Err(refuse(RecvRefusal::Busy));
            }
            sub.active_key = Some(key);
        }
        if sub.mode != Mode::Skip {
            self.events.push(RecvEvent::Receiving {
                incremental: sub.begin.from_guid.0 != 0,
                to_name,
                dest_snap,
                dry_run: sub.mode == Mode::DryRun,
            });
        }
        self.current = Some(sub);
        Ok(())
    }

    /// A full stream, or a clone: a new filesystem, or with `-F` one replacing `dest_fs`.
    fn begin_new(&mut self, spa: &mut Spa, sub: &mut Substream) -> Result<(), RecvError> {
        let context = sub.context;
        let (pool, refuse) = (pool_error(context), refusal(context));
        let dest_fs = sub.dest_fs.clone();
        let origin = if sub.begin.is_clone() {
            Some(
                find_origin(spa, sub.begin.from_guid, &dest_fs)
                    .map_err(pool)?
                    .ok_or_else(|| {
                        refuse(RecvRefusal::OriginMissing {
                            dest_snap: sub.dest_snap.clone(),
                        })
                    })?,
            )
        } else {
            None
        };
        if spa.lookup_dir(&dest_fs).map_err(pool)?.is_some() {
            if !self.options.force {
                return Err(refuse(RecvRefusal::DestinationExists { dest_fs }));
            }
            if let Some((first, _, _)) = spa.snapshots(&dest_fs).map_err(pool)?.into_iter().next() {
                return Err(refuse(RecvRefusal::DestinationHasSnapshots { first }));
            }
            if spa.origin_of(&dest_fs).map_err(pool)?.is_some() {
                return Err(refuse(RecvRefusal::DestinationIsClone { dest_fs }));
            }
            sub.work = format!("{dest_fs}/{RECV_CHILD_NAME}");
        } else {
            let parent = dest_fs.rsplit_once('/').map(|(p, _)| p.to_string());
            let Some(parent) = parent else {
                return Err(refuse(RecvRefusal::DestinationMissing { dest_fs }));
            };
            if spa.lookup_dir(&parent).map_err(pool)?.is_none() {
                if self.options.name_mode != NameMode::DiscardFirst {
                    return Err(refuse(RecvRefusal::ParentMissing { parent }));
                }
                if sub.mode == Mode::Apply {
                    create_parents(spa, &parent).map_err(pool)?;
                }
            }
        }
        if sub.mode != Mode::Apply {
            return Ok(());
        }
        let created = match &origin {
            Some(origin) => spa.clone_snapshot(origin, &sub.work),
            // A volume's stream brings its objects 1 and 2 itself.
            None if sub.begin.info.get_u64("type") == Some(3) => {
                spa.create_volume_for_receive(&sub.work)
            }
            None => spa.create_filesystem(&sub.work),
        };
        created.map_err(pool)?;
        self.mark_work(spa, sub).map_err(pool)
    }

    /// A new work dataset: its receive state (the first resume token under `-s`, so even
    /// a receive killed before its first commit point can be resumed) and the properties
    /// that shape what is written (compression, recordsize, …).
    fn mark_work(&self, spa: &mut Spa, sub: &Substream) -> Result<(), SpaError> {
        let state = if self.options.resumable {
            super::recv::resume_token(sub, self.parser.offset_bytes())
        } else {
            String::new()
        };
        spa.set_local_prop(&sub.work, RECV_STATE_PROP, &state)?;
        if let Some(props) = &sub.received_props {
            spa.set_received_props(&sub.work, props)?;
        }
        for (name, value) in &sub.local_props {
            spa.set_local_prop(&sub.work, name, value)?;
        }
        spa.refresh_io_props()
    }

    /// An incremental: onto `dest_fs`'s snapshot with the stream's from guid.
    fn begin_incremental(&mut self, spa: &mut Spa, sub: &mut Substream) -> Result<(), RecvError> {
        let context = sub.context;
        let (pool, refuse) = (pool_error(context), refusal(context));
        let dest_fs = sub.dest_fs.clone();
        if spa.lookup_dir(&dest_fs).map_err(pool)?.is_none() {
            return Err(refuse(RecvRefusal::DestinationMissing { dest_fs }));
        }
        let snapshots = spa.snapshots(&dest_fs).map_err(pool)?;
        if let Some((_, _, phys)) = snapshots.iter().find(|(n, _, _)| *n == sub.dest_snap) {
            if phys.guid == sub.begin.to_guid.0 {
                sub.mode = Mode::Skip;
                self.events.push(RecvEvent::Skipped {
                    dest_snap: sub.dest_snap.clone(),
                });
                return Ok(());
            }
            return Err(refuse(RecvRefusal::SnapshotExists {
                dest_snap: sub.dest_snap.clone(),
            }));
        }
        let Some(index) = snapshots
            .iter()
            .position(|(_, _, phys)| phys.guid == sub.begin.from_guid.0)
        else {
            return Err(refuse(RecvRefusal::SourceMismatch { dest_fs }));
        };
        let newest = index + 1 == snapshots.len();
        if !self.options.force
            && (!newest || spa.modified_since_newest_snapshot(&dest_fs).map_err(pool)?)
        {
            return Err(refuse(RecvRefusal::Modified { dest_fs }));
        }
        for (later, object, _) in &snapshots[index + 1..] {
            if !spa.dependent_clones(*object).map_err(pool)?.is_empty()
                || !spa.holds(later).map_err(pool)?.is_empty()
            {
                return Err(refuse(RecvRefusal::LaterSnapshotPinned {
                    snapshot: later.clone(),
                }));
            }
        }
        let base = snapshots[index].0.clone();
        sub.base = Some(base.clone());
        sub.work = format!("{dest_fs}/{RECV_CHILD_NAME}");
        if sub.mode != Mode::Apply {
            return Ok(());
        }
        spa.clone_snapshot(&base, &sub.work)
            .and_then(|_| self.mark_work(spa, sub))
            .map_err(pool)
    }

    /// `zfs send -t` into a `-s` receive's saved state.
    fn begin_resume(
        &mut self,
        spa: &mut Spa,
        sub: &mut Substream,
        state: Option<(String, String)>,
    ) -> Result<(), RecvError> {
        let refuse = refusal(sub.context);
        let Some((work, value)) = state.filter(|(_, value)| !value.is_empty()) else {
            return Err(refuse(RecvRefusal::NoPartialSnapshot {
                dest_fs: sub.dest_fs.clone(),
            }));
        };
        let token = ResumeToken::decode(&value)
            .map_err(|why| refuse(RecvRefusal::BadResumeToken { why }))?;
        let info = &sub.begin.info;
        let start = (
            info.get_u64("resume_object").unwrap_or(0),
            info.get_u64("resume_offset").unwrap_or(0),
        );
        if token.to_guid != sub.begin.to_guid
            || token.from_guid != sub.begin.from_guid
            || (token.object, token.offset) != start
        {
            return Err(refuse(RecvRefusal::ResumeMismatch {
                dest_fs: sub.dest_fs.clone(),
            }));
        }
        let incremental = sub.begin.from_guid.0 != 0 && !sub.begin.is_clone();
        if incremental {
            let base = spa
                .snapshots(&sub.dest_fs)
                .map_err(pool_error(sub.context))?
                .into_iter()
                .find(|(_, _, phys)| phys.guid == sub.begin.from_guid.0)
                .map(|(name, _, _)| name);
            sub.base = Some(base.ok_or_else(|| {
                refuse(RecvRefusal::SourceMismatch {
                    dest_fs: sub.dest_fs.clone(),
                })
            })?);
        }
        sub.work = work;
        sub.position = start;
        sub.last_object = start.0.saturating_sub(1);
        sub.data_pos = start;
        sub.base_bytes = token.bytes;
        Ok(())
    }

    pub(super) fn end(&mut self, spa: &mut Spa, to_guid: Guid) -> Result<(), RecvError> {
        if self.compound_open && self.current.is_none() {
            self.compound_open = false;
            if let (Some(tosnap), Some((sendfs, fss))) =
                (self.destroy_unsent_at.take(), self.compound.clone())
            {
                self.destroy_unsent(spa, &sendfs, &tosnap, &fss)?;
            }
            return Ok(());
        }
        let matches = self
            .current
            .as_ref()
            .is_some_and(|sub| sub.begin.to_guid == to_guid);
        if !matches {
            let error = StreamError::BadRecord {
                seq: self.current.as_ref().map_or(0, |s| s.seq + 1),
                why: "END does not match its BEGIN".to_string(),
            };
            return Err(self.fail(spa, Failure::Stream(error)));
        }
        let Some(sub) = self.current.take() else {
            return Ok(());
        };
        if sub.mode != Mode::Apply {
            self.substreams += 1;
            return Ok(());
        }
        match self.commit(spa, &sub) {
            Ok(()) => {
                self.substreams += 1;
                self.events.push(RecvEvent::Received {
                    dest_snap: sub.dest_snap.clone(),
                    bytes: sub.base_bytes + self.parser.offset_bytes() - sub.start_offset,
                });
                Ok(())
            }
            Err(RecvError::Pool { error, .. }) => {
                self.current = Some(sub);
                Err(self.fail(spa, Failure::Pool(error)))
            }
            Err(other) => {
                self.current = Some(sub);
                let _ = self.fail(spa, Failure::Input(String::new()));
                Err(other)
            }
        }
    }

    /// The commit at END (see the module header).
    fn commit(&mut self, spa: &mut Spa, sub: &Substream) -> Result<(), RecvError> {
        let (pool, refuse) = (pool_error(sub.context), refusal(sub.context));
        // Everything that can refuse the properties is checked before the first change:
        // a refusal after the swap would leave the target half received.
        let received = sub.received_props.iter().flatten();
        for (name, value) in received.chain(&sub.local_props) {
            let bad_name = name.is_empty()
                || name.contains('\0')
                || name.len() > crate::zap::NAME_LEN_MAX_BYTES;
            if bad_name || value.len() > crate::zap::VALUE_SIZE_MAX_BYTES {
                return Err(refuse(RecvRefusal::InvalidProperty {
                    name: name.escape_debug().to_string(),
                }));
            }
        }
        let pending = sub.pending;
        spa.with_dataset(&sub.work, |os, ctx| {
            super::recv::finalize_object(os, ctx, pending)
        })
        .map_err(pool)?;
        if let Some(base) = &sub.base {
            let snapshots = spa.snapshots(&sub.dest_fs).map_err(pool)?;
            let index = snapshots
                .iter()
                .position(|(name, _, _)| name == base)
                .ok_or_else(|| pool(SpaError::Invalid(format!("{base} was destroyed"))))?;
            let later = &snapshots[index + 1..];
            if !self.options.force
                && (!later.is_empty()
                    || spa
                        .modified_since_newest_snapshot(&sub.dest_fs)
                        .map_err(pool)?)
            {
                return Err(refuse(RecvRefusal::Modified {
                    dest_fs: sub.dest_fs.clone(),
                }));
            }
            for (name, _, _) in later.iter().rev() {
                spa.destroy_snapshot(name).map_err(pool)?;
            }
            if spa
                .modified_since_newest_snapshot(&sub.dest_fs)
                .map_err(pool)?
            {
                spa.rollback(base).map_err(pool)?;
            }
        }
        if sub.work != sub.dest_fs {
            spa.recv_swap(&sub.dest_fs, &sub.work).map_err(pool)?;
        } else {
            spa.clear_local_prop(&sub.dest_fs, RECV_STATE_PROP)
                .map_err(pool)?;
        }
        spa.snapshot_as(
            std::slice::from_ref(&sub.dest_snap),
            Some((sub.begin.to_guid, sub.begin.creation_time)),
        )
        .map_err(pool)?;
        if let Some(props) = &sub.received_props {
            spa.set_received_props(&sub.dest_fs, props).map_err(pool)?;
        }
        for (name, value) in &sub.local_props {
            spa.set_local_prop(&sub.dest_fs, name, value)
                .map_err(pool)?;
        }
        if let Some(props) = &sub.snap_props {
            spa.set_snapshot_received_props(&sub.dest_snap, props)
                .map_err(pool)?;
        }
        for tag in &sub.holds {
            let _ = spa.hold(tag, &sub.dest_snap);
        }
        spa.refresh_io_props().map_err(pool)?;
        spa.sync().map_err(pool)?;
        Ok(())
    }
}

/// The properties of a stream's `props`/`snapprops` nvlist as text, the insane ones (a
/// private `%` name, an oversized name or value, a name of other characters) left out.
fn props_of(props: &NvList) -> Props {
    let mut out = Vec::new();
    for (name, value) in &props.entries {
        // libzfs sends index and number properties as uint64.
        let text = match value {
            NvValue::Str(text) => Some(text.clone()),
            NvValue::U64(number) => Some(
                crate::dsl::openzfs::index::name_of(name, *number)
                    .unwrap_or_else(|| number.to_string()),
            ),
            _ => None,
        };
        if let Some(value) = text {
            let sane = name.len() <= 256
                && !name.starts_with('%')
                && value.len() <= 8192
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ":-._".contains(c));
            if sane {
                out.push((name.clone(), value));
            }
        }
    }
    out
}

/// The snapshot a clone stream's origin guid names: the one nearest the destination in the
/// dataset tree (a pool may hold the same guid twice, e.g. the sent snapshot itself when a
/// replication stream is received into its own pool).
fn find_origin(spa: &mut Spa, guid: Guid, dest_fs: &str) -> Result<Option<String>, SpaError> {
    let shared = |fs: &str| {
        fs.split('/')
            .zip(dest_fs.split('/'))
            .take_while(|(a, b)| a == b)
            .count()
    };
    let mut best: Option<(usize, String)> = None;
    for fs in spa.dataset_names()? {
        if fs.contains('%') {
            continue;
        }
        if let Some((name, _, _)) = spa
            .snapshots(&fs)?
            .into_iter()
            .find(|(_, _, phys)| phys.guid == guid.0)
        {
            let score = shared(&fs);
            if best.as_ref().is_none_or(|(b, _)| score > *b) {
                best = Some((score, name));
            }
        }
    }
    Ok(best.map(|(_, name)| name))
}

/// `-d`: creates the missing filesystems above a destination.
fn create_parents(spa: &mut Spa, fs: &str) -> Result<(), SpaError> {
    let parts: Vec<&str> = fs.split('/').collect();
    for end in 2..=parts.len() {
        let partial = parts[..end].join("/");
        if spa.lookup_dir(&partial)?.is_none() {
            spa.create_filesystem(&partial)?;
        }
    }
    Ok(())
}
