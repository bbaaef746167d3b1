//! Resume tokens (OpenZFS `receive_resume_token`, `zfs send -t`): where an interrupted
//! `zfs receive -s` stopped, as a printable string the sending side turns back into a
//! stream. The format is OpenZFS's (`dsl_dataset.c` `get_receive_resume_token`, libzfs
//! `zfs_send_resume_token_to_nvlist`), so `zstream token` reads Zetta's tokens:
//!
//! ```text
//! 1-<w>-<len>-<hex>
//!   hex  zlib (level 6) of the XDR-packed nvlist below, as lowercase hex
//!   len  the packed nvlist's length in bytes, hex
//!   w    word 0 of fletcher-4 over the compressed bytes (whole 4-byte words), hex
//! nvlist: fromguid u64, object u64, offset u64, bytes u64, toguid u64, toname string,
//!         compressok (boolean, present with -c), and Zetta's `zetta:clone` (boolean,
//!         present for a clone's substream; OpenZFS ignores names it does not know)
//! ```
//!
//! Decoding checks the version, the checksum, that the data inflates to exactly `len`
//! bytes and that the nvlist parses before trusting a field.

use crate::nvpair_xdr::{self, XdrNvList, XdrValue};
use crate::types::Guid;
use zetta_zcommon::checksum::fletcher4;
use zetta_zcommon::compress::openzfs::{zlib_compress, zlib_decompress};

/// `ZFS_SEND_RESUME_TOKEN_VERSION`.
const TOKEN_VERSION: &str = "1";
/// Longest token accepted (a name is at most a few hundred bytes).
const TOKEN_LEN_MAX: usize = 16 << 10;
const CLONE_PAIR: &str = "zetta:clone";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumeToken {
    pub to_name: String,
    pub to_guid: Guid,
    pub from_guid: Guid,
    /// The first object (and offset in it) the resumed stream must carry.
    pub object: u64,
    pub offset: u64,
    /// Stream bytes received before the interruption.
    pub bytes: u64,
    pub compressed: bool,
    /// `largeblockok`: the interrupted stream carried blocks over 128 KiB whole.
    pub large_blocks: bool,
    pub clone: bool,
}

/// fletcher-4 over the whole 4-byte words of `bytes` (`fletcher_4_native_varsize`).
fn token_sum(bytes: &[u8]) -> u64 {
    fletcher4(&bytes[..bytes.len() / 4 * 4])[0]
}

impl ResumeToken {
    pub fn encode(&self) -> String {
        let mut list = XdrNvList::new();
        list.add("fromguid", XdrValue::Uint64(self.from_guid.0));
        list.add("object", XdrValue::Uint64(self.object));
        list.add("offset", XdrValue::Uint64(self.offset));
        list.add("bytes", XdrValue::Uint64(self.bytes));
        list.add("toguid", XdrValue::Uint64(self.to_guid.0));
        list.add("toname", XdrValue::String(self.to_name.as_bytes().to_vec()));
        if self.large_blocks {
            list.add("largeblockok", XdrValue::Boolean);
        }
        if self.compressed {
            list.add("compressok", XdrValue::Boolean);
        }
        if self.clone {
            list.add(CLONE_PAIR, XdrValue::Boolean);
        }
        // Only names and values built here: packing and compressing cannot fail.
        let packed = nvpair_xdr::pack(&list).unwrap_or_default();
        let compressed = zlib_compress(&packed, 6).unwrap_or_default();
        let hex: String = compressed.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{TOKEN_VERSION}-{:x}-{:x}-{hex}",
            token_sum(&compressed),
            packed.len()
        )
    }

    pub fn decode(token: &str) -> Result<ResumeToken, String> {
        let invalid = |why: &str| format!("resume token is corrupt ({why})");
        if token.len() > TOKEN_LEN_MAX {
            return Err(invalid("too long"));
        }
        let mut parts = token.trim().splitn(4, '-');
        let (Some(version), Some(sum), Some(len), Some(hex)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid("invalid format"));
        };
        if version != TOKEN_VERSION {
            return Err(format!(
                "resume token is corrupt (invalid version {version})"
            ));
        }
        if hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid("payload is not hex-encoded"));
        }
        let compressed: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0))
            .collect();
        if u64::from_str_radix(sum, 16).ok() != Some(token_sum(&compressed)) {
            return Err(invalid("incorrect checksum"));
        }
        let len = usize::from_str_radix(len, 16)
            .ok()
            .filter(|len| *len <= TOKEN_LEN_MAX * 4)
            .ok_or_else(|| invalid("invalid length"))?;
        let packed =
            zlib_decompress(&compressed, len).map_err(|_| invalid("failed to uncompress"))?;
        let list = nvpair_xdr::unpack(&packed)
            .map_err(|_| invalid("payload is not an nvlist"))?
            .list;
        let number = |name: &str| list.get_u64(name).ok_or_else(|| invalid(name));
        let to_name = match list.get("toname") {
            Some(XdrValue::String(s)) => {
                String::from_utf8(s.clone()).map_err(|_| invalid("toname"))?
            }
            _ => return Err(invalid("toname")),
        };
        Ok(ResumeToken {
            to_name,
            to_guid: Guid(number("toguid")?),
            from_guid: Guid(list.get_u64("fromguid").unwrap_or(0)),
            object: number("object")?,
            offset: number("offset")?,
            bytes: list.get_u64("bytes").unwrap_or(0),
            compressed: list.get("compressok").is_some(),
            large_blocks: list.get("largeblockok").is_some(),
            clone: list.get(CLONE_PAIR).is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token survives its round trip, and any damage to it is refused, never trusted.
    #[test]
    fn token_round_trip_and_damage() {
        let token = ResumeToken {
            to_name: "tank/fs@snap".to_string(),
            to_guid: Guid(0x1234),
            from_guid: Guid(7),
            object: 42,
            offset: 131072,
            bytes: 99,
            compressed: true,
            large_blocks: true,
            clone: false,
        };
        let text = token.encode();
        assert!(text.starts_with("1-"));
        assert_eq!(ResumeToken::decode(&text).unwrap(), token);
        for cut in 0..text.len() {
            assert!(ResumeToken::decode(&text[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = text.clone().into_bytes();
        let last = flipped.len() - 3;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        assert!(ResumeToken::decode(&String::from_utf8(flipped).unwrap()).is_err());
        assert!(ResumeToken::decode("1-abc-12-789c").is_err());
        assert!(ResumeToken::decode("zt1-abc-12-789c").is_err());
    }
}
