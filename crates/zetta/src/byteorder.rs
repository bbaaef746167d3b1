//! The byte order of OpenZFS on-disk structures, and bounds-checked field readers.
//!
//! ZFS counterpart: `include/sys/byteorder.h`, `module/zfs/zfs_byteswap.c` and the
//! `BP_SHOULD_BYTESWAP` rule. OpenZFS writes every structure in the writer's native order and
//! records that order instead of converting: the uberblock by its magic (`0x00bab10c` reads
//! back as `0x0cb1ba00` on the other order), every block by the byte-order bit of the block
//! pointer that names it (bit 63 of the prop word: 1 = little-endian). A reader swaps when
//! the recorded order is not its own. A big-endian pool (written on SPARC) therefore imports
//! here with every u64 of its metadata read through `ByteOrder::Big`.
//!
//! Invariants: the readers never panic on outside bytes; a field that does not fit in the
//! buffer is `Err(ShortRead)`, whose fields say what was asked for.

use std::fmt;

/// The order in which a structure's integers were written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    Little,
    Big,
}

/// A field read past the end of its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortRead {
    /// Byte offset of the field.
    pub offset: usize,
    /// Width of the field in bytes.
    pub width: usize,
    /// Length of the buffer it was read from.
    pub len: usize,
}

impl fmt::Display for ShortRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a {}-byte field at offset {} lies past the end of a {}-byte structure",
            self.width, self.offset, self.len
        )
    }
}

impl std::error::Error for ShortRead {}

impl ByteOrder {
    /// The order of the machine we run on (OpenZFS's `ZFS_HOST_BYTEORDER`).
    pub const HOST: ByteOrder = if cfg!(target_endian = "little") {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    };

    /// The order a block pointer's byte-order bit names (1 = little-endian).
    pub fn from_bp_bit(bit: bool) -> ByteOrder {
        if bit {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        }
    }

    /// Whether structures in this order must be swapped on this machine.
    pub fn needs_swap(self) -> bool {
        self != ByteOrder::HOST
    }

    fn field<const N: usize>(buf: &[u8], offset: usize) -> Result<[u8; N], ShortRead> {
        offset
            .checked_add(N)
            .and_then(|end| buf.get(offset..end))
            .and_then(|s| s.try_into().ok())
            .ok_or(ShortRead {
                offset,
                width: N,
                len: buf.len(),
            })
    }

    pub fn u16_at(self, buf: &[u8], offset: usize) -> Result<u16, ShortRead> {
        let b = Self::field::<2>(buf, offset)?;
        Ok(match self {
            ByteOrder::Little => u16::from_le_bytes(b),
            ByteOrder::Big => u16::from_be_bytes(b),
        })
    }

    pub fn u32_at(self, buf: &[u8], offset: usize) -> Result<u32, ShortRead> {
        let b = Self::field::<4>(buf, offset)?;
        Ok(match self {
            ByteOrder::Little => u32::from_le_bytes(b),
            ByteOrder::Big => u32::from_be_bytes(b),
        })
    }

    pub fn u64_at(self, buf: &[u8], offset: usize) -> Result<u64, ShortRead> {
        let b = Self::field::<8>(buf, offset)?;
        Ok(match self {
            ByteOrder::Little => u64::from_le_bytes(b),
            ByteOrder::Big => u64::from_be_bytes(b),
        })
    }

    /// `n` consecutive u64 words from `offset`.
    pub fn u64s_at<const N: usize>(self, buf: &[u8], offset: usize) -> Result<[u64; N], ShortRead> {
        let mut out = [0u64; N];
        for (i, word) in out.iter_mut().enumerate() {
            *word = self.u64_at(buf, offset + 8 * i)?;
        }
        Ok(out)
    }

    pub fn put_u64(self, buf: &mut [u8], offset: usize, value: u64) -> Result<(), ShortRead> {
        let len = buf.len();
        let slot = offset
            .checked_add(8)
            .and_then(|end| buf.get_mut(offset..end))
            .ok_or(ShortRead {
                offset,
                width: 8,
                len,
            })?;
        slot.copy_from_slice(&match self {
            ByteOrder::Little => value.to_le_bytes(),
            ByteOrder::Big => value.to_be_bytes(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: every OpenZFS decoder reads its fields through these; a swapped or off-by-one
    // reader would misread every big-endian pool, and a panic on a short buffer would let a
    // corrupt device crash the daemon.
    #[test]
    fn fields_read_in_either_order_and_short_buffers_are_errors() {
        let buf = [0x00, 0xba, 0xb1, 0x0c, 0, 0, 0, 0];
        assert_eq!(ByteOrder::Little.u64_at(&buf, 0), Ok(0x0cb1_ba00));
        assert_eq!(ByteOrder::Big.u64_at(&buf, 0), Ok(0x00ba_b10c_0000_0000));
        assert_eq!(ByteOrder::Big.u32_at(&buf, 0), Ok(0x00ba_b10c));
        assert_eq!(ByteOrder::Little.u16_at(&buf, 1), Ok(0xb1ba));
        assert_eq!(
            ByteOrder::Little.u64_at(&buf, 1),
            Err(ShortRead {
                offset: 1,
                width: 8,
                len: 8
            })
        );
        assert!(ByteOrder::Little.u64_at(&buf, usize::MAX - 2).is_err());
        let mut out = [0u8; 16];
        ByteOrder::Big.put_u64(&mut out, 8, 0x0102).unwrap();
        assert_eq!(ByteOrder::Big.u64s_at::<2>(&out, 0), Ok([0, 0x0102]));
        assert!(ByteOrder::Big.put_u64(&mut out, 9, 1).is_err());
        assert_eq!(ByteOrder::from_bp_bit(true), ByteOrder::Little);
    }
}
