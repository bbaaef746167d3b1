//! Arithmetic in GF(2^8), the field RAID-Z parity lives in.
//!
//! ZFS counterpart: the `vdev_raidz_pow2`/`vdev_raidz_log2` tables and the
//! `VDEV_RAIDZ_64MUL_2` word trick in vdev_raidz.c.
//!
//! Theory. A byte is a polynomial over GF(2) of degree < 8; addition is XOR;
//! multiplication is polynomial multiplication reduced modulo
//! x^8 + x^4 + x^3 + x^2 + 1 (0x11d). That polynomial is primitive, so the
//! element 2 (the polynomial x) generates all 255 non-zero bytes:
//! every non-zero a is 2^log(a) for a unique log(a) in 0..255. Hence
//! a·b = 2^((log a + log b) mod 255) and a^-1 = 2^(255 - log a).
//! The exponent table is stored twice over (512 entries) so that a sum of two
//! logs (at most 508) indexes it without a modulo.
//!
//! Multiplying by 2 is a left shift, and when bit 7 falls off we XOR in 0x1d
//! (the low byte of 0x11d). That works on eight bytes of a `u64` at once:
//! shift the low 7 bits of every byte left by one, and for every byte whose
//! top bit was set XOR 0x1d into that byte. Worked: 0x80·2 = 0x100 → 0x1d;
//! 0xc3·2 = 0x186 → 0x86 ^ 0x1d = 0x9b. Multiplying by 4 is doing it twice.
//!
//! Invariants: `EXP[i] == EXP[i + 255]`; `LOG[EXP[i]] == i` for i < 255;
//! `LOG[0]` is never read (zero has no logarithm; every caller checks).

/// The field's reduction polynomial x^8 + x^4 + x^3 + x^2 + 1.
pub(crate) const GF_POLYNOMIAL: u16 = 0x11d;
/// Number of non-zero field elements: the order of the generator 2.
pub(crate) const GF_ORDER: usize = 255;

const fn gf_tables_build() -> ([u8; 2 * GF_ORDER + 2], [u8; GF_ORDER + 1]) {
    let mut exp = [0u8; 2 * GF_ORDER + 2];
    let mut log = [0u8; GF_ORDER + 1];
    let mut value: u16 = 1;
    let mut index = 0;
    while index < GF_ORDER {
        exp[index] = value as u8;
        log[value as usize] = index as u8;
        value <<= 1;
        if value & 0x100 != 0 {
            value ^= GF_POLYNOMIAL;
        }
        index += 1;
    }
    while index < exp.len() {
        exp[index] = exp[index - GF_ORDER];
        index += 1;
    }
    (exp, log)
}

const GF_TABLES: ([u8; 2 * GF_ORDER + 2], [u8; GF_ORDER + 1]) = gf_tables_build();
static GF_EXP: [u8; 2 * GF_ORDER + 2] = GF_TABLES.0;
static GF_LOG: [u8; GF_ORDER + 1] = GF_TABLES.1;

/// a·b in GF(2^8).
pub(crate) fn gf_mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        return 0;
    }
    GF_EXP[GF_LOG[a as usize] as usize + GF_LOG[b as usize] as usize]
}

/// a^-1 in GF(2^8). Zero has no inverse: asking for it is a broken invariant.
pub(crate) fn gf_inv(a: u8) -> u8 {
    assert!(a != 0, "zero has no inverse in GF(2^8)");
    GF_EXP[GF_ORDER - GF_LOG[a as usize] as usize]
}

/// 2^exponent in GF(2^8), for any exponent (the group has order 255).
pub(crate) fn gf_pow2(exponent: usize) -> u8 {
    GF_EXP[exponent % GF_ORDER]
}

/// The 256-entry table of `coefficient · x` for every byte x.
pub(crate) fn gf_mul_table(coefficient: u8) -> [u8; 256] {
    let mut table = [0u8; 256];
    for (x, slot) in table.iter_mut().enumerate() {
        *slot = gf_mul(coefficient, x as u8);
    }
    table
}

/// Multiplies each of the eight bytes of `word` by 2.
#[inline(always)]
pub(crate) fn gf_mul2_word(word: u64) -> u64 {
    const LOW_7_BITS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH_BIT_TO_BIT_0: u64 = 0x0101_0101_0101_0101;
    let overflow = (word >> 7) & HIGH_BIT_TO_BIT_0;
    ((word & LOW_7_BITS) << 1) ^ (overflow * (GF_POLYNOMIAL as u64 & 0xff))
}

/// Multiplies each byte of `word` by 2^power (power 0, 1 or 2 in practice).
#[inline(always)]
pub(crate) fn gf_mul_pow2_word(word: u64, power: usize) -> u64 {
    let mut result = word;
    for _ in 0..power {
        result = gf_mul2_word(result);
    }
    result
}

/// Inverts the top-left `size`×`size` block of `matrix` by Gauss-Jordan
/// elimination. Returns `None` if it is singular.
pub(crate) fn gf_matrix_invert<const N: usize>(
    matrix: &[[u8; N]; N],
    size: usize,
) -> Option<[[u8; N]; N]> {
    assert!(size <= N);
    let mut work = *matrix;
    let mut inverse = [[0u8; N]; N];
    for (row, inverse_row) in inverse.iter_mut().enumerate().take(size) {
        inverse_row[row] = 1;
    }
    for column in 0..size {
        let pivot_row = (column..size).find(|&row| work[row][column] != 0)?;
        work.swap(column, pivot_row);
        inverse.swap(column, pivot_row);
        let pivot_inverse = gf_inv(work[column][column]);
        for index in 0..size {
            work[column][index] = gf_mul(work[column][index], pivot_inverse);
            inverse[column][index] = gf_mul(inverse[column][index], pivot_inverse);
        }
        for row in 0..size {
            let factor = work[row][column];
            if row == column || factor == 0 {
                continue;
            }
            for index in 0..size {
                work[row][index] ^= gf_mul(factor, work[column][index]);
                inverse[row][index] ^= gf_mul(factor, inverse[column][index]);
            }
        }
    }
    Some(inverse)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slow bit-by-bit multiply, the definition the tables must agree with.
    fn gf_mul_slow(a: u8, b: u8) -> u8 {
        let mut product: u16 = 0;
        let mut a_shifted = a as u16;
        for bit in 0..8 {
            if b & (1 << bit) != 0 {
                product ^= a_shifted;
            }
            a_shifted <<= 1;
            if a_shifted & 0x100 != 0 {
                a_shifted ^= GF_POLYNOMIAL;
            }
        }
        product as u8
    }

    // Why: every parity byte depends on the log/exp tables; check them
    // against the textbook definition for all 65536 products.
    #[test]
    fn gf_mul_matches_definition() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(gf_mul(a, b), gf_mul_slow(a, b), "{a} * {b}");
            }
        }
    }

    // Why: reconstruction divides by matrix pivots; a wrong inverse would
    // silently rebuild garbage.
    #[test]
    fn gf_inv_is_inverse() {
        for a in 1..=255u8 {
            assert_eq!(gf_mul(a, gf_inv(a)), 1);
        }
    }

    // Why: the SWAR multiply-by-2 drives P/Q/R generation; it must agree with
    // the scalar multiply in every byte lane, including the worked examples.
    #[test]
    fn gf_mul2_word_matches_scalar() {
        assert_eq!(gf_mul(0x80, 2), 0x1d);
        assert_eq!(gf_mul(0xc3, 2), 0x9b);
        for base in (0..=255u8).step_by(8) {
            let bytes: [u8; 8] = std::array::from_fn(|lane| base.wrapping_add(lane as u8));
            let word = u64::from_ne_bytes(bytes);
            for power in 0..3 {
                let result = gf_mul_pow2_word(word, power).to_ne_bytes();
                for lane in 0..8 {
                    assert_eq!(result[lane], gf_mul(bytes[lane], gf_pow2(power)));
                }
            }
        }
    }

    // Why: 3-failure rebuild inverts a Vandermonde matrix; check A·A^-1 = I
    // and that a singular matrix is reported, not mis-inverted.
    #[test]
    fn gf_matrix_invert_vandermonde() {
        let exponents = [7usize, 3, 0];
        let mut matrix = [[0u8; 3]; 3];
        for (row, matrix_row) in matrix.iter_mut().enumerate() {
            for (column, &exponent) in exponents.iter().enumerate() {
                matrix_row[column] = gf_pow2(row * exponent);
            }
        }
        let inverse = gf_matrix_invert(&matrix, 3).expect("Vandermonde is invertible");
        for (row, matrix_row) in matrix.iter().enumerate() {
            for column in 0..3 {
                let sum = matrix_row
                    .iter()
                    .zip(&inverse)
                    .fold(0u8, |sum, (&a, inverse_row)| {
                        sum ^ gf_mul(a, inverse_row[column])
                    });
                assert_eq!(sum, u8::from(row == column));
            }
        }
        let singular = [[1u8, 1, 0], [1, 1, 0], [0, 0, 1]];
        assert!(gf_matrix_invert(&singular, 3).is_none());
    }
}
