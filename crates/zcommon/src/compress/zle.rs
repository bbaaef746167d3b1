//! ZLE, zero-length encoding: compresses only runs of zero bytes, for blocks that are mostly
//! zeros with some data (partially written records, sparse metadata).
//!
//! ZFS counterpart: `module/zfs/zle.c`. Same idea (a control byte announcing either a literal run
//! or a zero run); the exact byte layout below is ours.
//!
//! Payload: a sequence of items, each a control byte `c` followed by data:
//!
//! ```text
//!  c = 0b0nnnnnnn : literal run of n+1 bytes (1..=128), the bytes follow
//!  c = 0b1nnnnnnn : zero run of n+1 bytes (1..=128), nothing follows
//! ```
//!
//! The encoder ends a literal run when at least `ZLE_ZERO_RUN_MIN_BYTES` zeros start (a shorter
//! zero run would cost as much as it saves). Invariant: decoding stops exactly at the payload's
//! end; a run that would pass the logical size, or a literal that runs out of payload, is an
//! error.

use crate::error::CompressError;

/// Longest run one control byte can describe.
const ZLE_RUN_MAX_BYTES: usize = 128;

/// Control-byte flag marking a zero run.
const ZLE_ZERO_RUN_FLAG: u8 = 0x80;

/// Shortest zero run worth ending a literal run for.
const ZLE_ZERO_RUN_MIN_BYTES: usize = 3;

/// Encodes `src` into `out`; `None` if it does not fit.
pub(super) fn compress(src: &[u8], out: &mut [u8]) -> Option<usize> {
    let mut out_pos = 0;
    let mut src_pos = 0;
    while src_pos < src.len() {
        let run_start = src_pos;
        if src[src_pos] == 0 {
            while src_pos < src.len()
                && src[src_pos] == 0
                && src_pos - run_start < ZLE_RUN_MAX_BYTES
            {
                src_pos += 1;
            }
            *out.get_mut(out_pos)? = ZLE_ZERO_RUN_FLAG | (src_pos - run_start - 1) as u8;
            out_pos += 1;
        } else {
            while src_pos < src.len() && src_pos - run_start < ZLE_RUN_MAX_BYTES {
                let zero_run_starts = src[src_pos..]
                    .get(..ZLE_ZERO_RUN_MIN_BYTES)
                    .is_some_and(|window| window.iter().all(|&byte| byte == 0));
                if zero_run_starts {
                    break;
                }
                src_pos += 1;
            }
            let literal = &src[run_start..src_pos];
            *out.get_mut(out_pos)? = (literal.len() - 1) as u8;
            out.get_mut(out_pos + 1..out_pos + 1 + literal.len())?
                .copy_from_slice(literal);
            out_pos += 1 + literal.len();
        }
    }
    Some(out_pos)
}

/// Decodes `payload` into `dst`; returns the number of bytes produced.
pub(super) fn decompress(payload: &[u8], dst: &mut [u8]) -> Result<usize, CompressError> {
    let malformed = |reason: String| CompressError::Malformed {
        algorithm: "zle",
        reason,
    };
    let mut src_pos = 0;
    let mut dst_pos = 0;
    while let Some(&control) = payload.get(src_pos) {
        src_pos += 1;
        let run_len = usize::from(control & !ZLE_ZERO_RUN_FLAG) + 1;
        let logical_size_bytes = dst.len();
        let target = dst.get_mut(dst_pos..dst_pos + run_len).ok_or_else(|| {
            malformed(format!(
                "run of {run_len} bytes at output offset {dst_pos} passes the logical size of \
                 {logical_size_bytes}"
            ))
        })?;
        if control & ZLE_ZERO_RUN_FLAG != 0 {
            target.fill(0);
        } else {
            let literal = payload.get(src_pos..src_pos + run_len).ok_or_else(|| {
                malformed(format!(
                    "literal run of {run_len} bytes at payload offset {src_pos} is cut short"
                ))
            })?;
            target.copy_from_slice(literal);
            src_pos += run_len;
        }
        dst_pos += run_len;
    }
    Ok(dst_pos)
}
