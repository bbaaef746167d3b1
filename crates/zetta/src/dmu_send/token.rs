//! Resume tokens (OpenZFS `receive_resume_token`, `zfs send -t`): where an interrupted
//! `zfs receive -s` stopped, as a printable string the sending side turns back into a
//! stream.
//!
//! ```text
//! zt1-<w>-<len>-<hex>
//!   hex  the nvlist (our encoding) below, as lowercase hex
//!   len  its length in bytes, hex
//!   w    word 0 of its fletcher-4 checksum, hex
//! nvlist: toname str, toguid u64, fromguid u64, object u64, offset u64, bytes u64,
//!         compressok u64 (0/1), clone u64 (0/1)
//! ```
//!
//! The shape follows OpenZFS's `1-<checksum>-<length>-<zlib nvlist hex>`; the prefix `zt1`
//! says it is ours (a real OpenZFS refuses it as an unknown version, and we refuse theirs).
//! Decoding checks the length and checksum before trusting a field.

use crate::nvlist::NvList;
use crate::types::Guid;
use zetta_zcommon::checksum::fletcher4;

const TOKEN_PREFIX: &str = "zt1";
/// Longest token accepted (a name is at most a few hundred bytes).
const TOKEN_LEN_MAX: usize = 16 << 10;

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
    pub clone: bool,
}

impl ResumeToken {
    pub fn encode(&self) -> String {
        let mut list = NvList::new();
        list.set_str("toname", &self.to_name)
            .set_u64("toguid", self.to_guid.0)
            .set_u64("fromguid", self.from_guid.0)
            .set_u64("object", self.object)
            .set_u64("offset", self.offset)
            .set_u64("bytes", self.bytes)
            .set_u64("compressok", u64::from(self.compressed))
            .set_u64("clone", u64::from(self.clone));
        let bytes = list.encode();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{TOKEN_PREFIX}-{:x}-{:x}-{hex}",
            fletcher4(&bytes)[0],
            bytes.len()
        )
    }

    pub fn decode(token: &str) -> Result<ResumeToken, String> {
        let invalid = |why: &str| format!("resume token is corrupt ({why})");
        if token.len() > TOKEN_LEN_MAX {
            return Err(invalid("too long"));
        }
        let mut parts = token.trim().splitn(4, '-');
        let (Some(prefix), Some(sum), Some(len), Some(hex)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid("not four fields"));
        };
        if prefix != TOKEN_PREFIX {
            return Err(format!(
                "resume token version {prefix} is not supported (expected {TOKEN_PREFIX})"
            ));
        }
        if hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid("bad hex"));
        }
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0))
            .collect();
        if usize::from_str_radix(len, 16).ok() != Some(bytes.len()) {
            return Err(invalid("length mismatch"));
        }
        if u64::from_str_radix(sum, 16).ok() != Some(fletcher4(&bytes)[0]) {
            return Err(invalid("checksum mismatch"));
        }
        let list = NvList::decode(&bytes).map_err(|e| invalid(&e.to_string()))?;
        let number = |name: &str| list.get_u64(name).ok_or_else(|| invalid(name));
        Ok(ResumeToken {
            to_name: list
                .get_str("toname")
                .ok_or_else(|| invalid("toname"))?
                .to_string(),
            to_guid: Guid(number("toguid")?),
            from_guid: Guid(number("fromguid")?),
            object: number("object")?,
            offset: number("offset")?,
            bytes: number("bytes")?,
            compressed: number("compressok")? != 0,
            clone: list.get_u64("clone").unwrap_or(0) != 0,
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
            clone: false,
        };
        let text = token.encode();
        assert!(text.starts_with("zt1-"));
        assert_eq!(ResumeToken::decode(&text).unwrap(), token);
        for cut in 0..text.len() {
            assert!(ResumeToken::decode(&text[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = text.clone().into_bytes();
        let last = flipped.len() - 3;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        assert!(ResumeToken::decode(&String::from_utf8(flipped).unwrap()).is_err());
        assert!(ResumeToken::decode("1-abc-12-789c").is_err());
    }
}
