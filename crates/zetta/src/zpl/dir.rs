//! Directory entries (OpenZFS `zfs_dir.c`): a directory's ZAP maps each name to one u64,
//! the object number in the low 48 bits and the dirent type (`S_IFMT >> 12`) in the top 4,
//! as `ZFS_DIRENT_MAKE` does.
//!
//! Listing resumes from an offset the kernel hands back. Offsets 0 and 1 are `.` and `..`;
//! an entry's offset packs the ZAP cursor just past it into 62 bits (the 48-bit hash
//! prefix and the low 14 bits of the collision differentiator — more than 16k names
//! sharing a 48-bit hash cannot occur), so `telldir`/`seekdir` and FUSE's signed offsets
//! work, and a listing survives entries added or removed between calls.
//!
//! ```text
//! dirent value u64:  bits 63..60 type (4 dir, 8 reg, 10 lnk, 2 chr, 6 blk, 1 fifo, 12 sock)
//!                    bits 47..0  object number
//! ```

use super::znode::FileKind;
use super::{ZplError, NAME_MAX_BYTES};
use crate::dmu::{IoCtx, ObjectSet};
use crate::types::ObjectId;
use crate::zap::{self, ZapValue, CURSOR_END};

const OBJECT_MASK: u64 = (1 << 48) - 1;
/// Offsets below this are `.` and `..`; ZAP positions are shifted above them.
const OFFSET_BIAS: u64 = 3;

pub fn dirent_make(object: u64, kind: FileKind) -> u64 {
    (kind.type_bits() >> 12) << 60 | (object & OBJECT_MASK)
}

pub fn dirent_object(value: u64) -> u64 {
    value & OBJECT_MASK
}

pub fn dirent_kind(value: u64) -> Option<FileKind> {
    FileKind::from_mode((value >> 60) << 12)
}

/// A name a directory may hold: 1..=255 bytes, no `/`, no NUL, not `.` or `..`.
pub fn check_name(name: &[u8]) -> Result<(), ZplError> {
    if name.len() > NAME_MAX_BYTES {
        return Err(ZplError::NameTooLong);
    }
    if name.is_empty() || name.contains(&b'/') || name.contains(&0) {
        return Err(ZplError::Invalid("bad file name".to_string()));
    }
    if name == b"." || name == b".." {
        return Err(ZplError::Exists);
    }
    Ok(())
}

/// The entry `name` of directory `dir`: (object, kind).
pub fn lookup(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
    name: &[u8],
) -> Result<Option<(u64, FileKind)>, ZplError> {
    if name.len() > NAME_MAX_BYTES {
        return Err(ZplError::NameTooLong);
    }
    let Some(words) = zap::zap_lookup(os, ctx, ObjectId(dir), name)? else {
        return Ok(None);
    };
    let value = words
        .first()
        .copied()
        .ok_or_else(|| ZplError::Io(format!("empty entry in directory {dir}")))?;
    let kind = dirent_kind(value)
        .ok_or_else(|| ZplError::Io(format!("entry of unknown type in directory {dir}")))?;
    Ok(Some((dirent_object(value), kind)))
}

pub fn add(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
    name: &[u8],
    object: u64,
    kind: FileKind,
) -> Result<(), ZplError> {
    zap::zap_add(os, ctx, ObjectId(dir), name, &[dirent_make(object, kind)])?;
    Ok(())
}

pub fn remove(os: &mut ObjectSet, ctx: &IoCtx<'_>, dir: u64, name: &[u8]) -> Result<(), ZplError> {
    zap::zap_remove(os, ctx, ObjectId(dir), name)?;
    Ok(())
}

pub fn is_empty(os: &ObjectSet, ctx: &IoCtx<'_>, dir: u64) -> Result<bool, ZplError> {
    Ok(zap::zap_count(os, ctx, ObjectId(dir))? == 0)
}

/// One entry of a listing; `next` is the offset that resumes just after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dirent {
    pub name: Vec<u8>,
    pub object: u64,
    pub kind: FileKind,
    pub next: i64,
}

/// A ZAP cursor (OpenZFS's serialized cursor: below 2^60) as a readdir offset, shifted
/// above `.` and `..`'s; the end of the walk is `i64::MAX`.
fn cursor_to_offset(cursor: u64) -> i64 {
    if cursor == CURSOR_END {
        return i64::MAX;
    }
    i64::try_from(cursor.saturating_add(OFFSET_BIAS)).unwrap_or(i64::MAX)
}

fn offset_to_cursor(offset: i64) -> u64 {
    if offset == i64::MAX {
        return CURSOR_END;
    }
    (offset as u64).saturating_sub(OFFSET_BIAS)
}

/// Up to `max` entries of `dir` from `offset` (0 = the start), with `.` and `..` first.
pub fn list(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
    parent: u64,
    offset: i64,
    max: usize,
) -> Result<Vec<Dirent>, ZplError> {
    let mut out = Vec::new();
    if offset < 0 || max == 0 {
        return Ok(out);
    }
    if offset == 0 {
        out.push(Dirent {
            name: b".".to_vec(),
            object: dir,
            kind: FileKind::Directory,
            next: 1,
        });
    }
    if offset <= 1 && out.len() < max {
        out.push(Dirent {
            name: b"..".to_vec(),
            object: parent,
            kind: FileKind::Directory,
            next: 2,
        });
    }
    if out.len() == max {
        return Ok(out);
    }
    let cursor = if offset <= 2 {
        0
    } else {
        offset_to_cursor(offset)
    };
    if cursor == CURSOR_END {
        return Ok(out);
    }
    let (entries, _) = zap::zap_list(os, ctx, ObjectId(dir), cursor, max - out.len())?;
    for entry in entries {
        let ZapValue::U64s(words) = entry.value else {
            return Err(ZplError::Io(format!("directory {dir} holds a byte entry")));
        };
        let value = words.first().copied().unwrap_or(0);
        let kind = dirent_kind(value)
            .ok_or_else(|| ZplError::Io(format!("entry of unknown type in directory {dir}")))?;
        out.push(Dirent {
            name: entry.name,
            object: dirent_object(value),
            kind,
            next: cursor_to_offset(zap::cursor_after(entry.cookie)),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dirent encoding is OpenZFS's: type in the top nibble, object below.
    #[test]
    fn dirent_encoding_golden() {
        assert_eq!(
            dirent_make(0x1234, FileKind::Regular),
            0x8000_0000_0000_1234
        );
        assert_eq!(dirent_make(7, FileKind::Directory), 0x4000_0000_0000_0007);
        assert_eq!(dirent_kind(0xA000_0000_0000_0009), Some(FileKind::Symlink));
        assert_eq!(dirent_object(0xA000_0000_0000_0009), 9);
    }

    /// Offsets round-trip to cursors, stay positive and clear of `.`/`..`'s offsets.
    #[test]
    fn offsets_round_trip() {
        for cursor in [1u64, 0x1_0000, 0x0fff_ffff_ffff_0001, 0x0800_0000_0000_3fff] {
            let offset = cursor_to_offset(cursor);
            assert!(offset >= 3, "{cursor:#x} -> {offset}");
            assert_eq!(offset_to_cursor(offset), cursor);
        }
    }
}
