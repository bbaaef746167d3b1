//! RAID-Z parity: split a block into columns, assemble it back, and rebuild
//! up to `parity` missing columns.
//!
//! ZFS counterpart: `vdev_raidz_generate_parity_*` and
//! `vdev_raidz_reconstruct_*` in vdev_raidz.c (and vdev_raidz_math*.c).
//!
//! Theory. Let the stripe have n data columns D_0..D_{n-1}; a column shorter
//! than the parity columns counts as zero-padded. All arithmetic is in
//! GF(2^8) (see `gf`), byte position by byte position:
//!
//! ```text
//!   P = D_0 + D_1 + ... + D_{n-1}                      (+ is XOR)
//!   Q = 2^(n-1)·D_0 + 2^(n-2)·D_1 + ... + 2^0·D_{n-1}
//!   R = 4^(n-1)·D_0 + 4^(n-2)·D_1 + ... + 4^0·D_{n-1}
//! ```
//!
//! computed by Horner's rule, one pass per data column: Q = Q·2 + D_i,
//! R = R·4 + D_i (a zero-padded tail of D_i is just Q = Q·2). Row j of the
//! parity (j = 0 P, 1 Q, 2 R) has multiplier g_j = 2^j, so parity row j
//! says Σ_i g_j^(n-1-i)·D_i = parity_j.
//!
//! Reconstruction, with a set M of k missing data columns and at least k
//! parity columns present (guaranteed when total missing <= p): pick k
//! present parity rows J. For each j in J, the syndrome
//! S_j = parity_j + Σ_{i ∉ M} g_j^(n-1-i)·D_i (Horner with the missing
//! columns set to zero) equals Σ_{m ∈ M} g_j^(n-1-m)·D_m. That is a k×k
//! linear system A·x = S with A[j][m] = 2^(j·(n-1-m)); we invert A once per
//! stripe (Gauss-Jordan, k <= 3) and rebuild each D_m = Σ_j A^-1[m][j]·S_j
//! with a 256-entry multiply table per coefficient. Worked small case: P
//! alone gives A = [1], so D_m = S_P, the XOR of P and the other columns;
//! Q alone gives A = [2^(n-1-m)], D_m = S_Q / 2^(n-1-m).
//!
//! A is invertible for every choice of rows and columns: write a_m =
//! 2^(n-1-m), distinct because n <= 254 < 255. Rows {P,Q,R} give a
//! Vandermonde matrix in the a_m; {P,R} has det a^2 + b^2 = (a + b)^2;
//! {Q,R} has det a·b·(a + b); single rows have det 1, a or a^2. None is zero.
//! Missing parity columns are then recomputed from the now complete data.
//!
//! Invariants: parity columns have the length of column 0, the longest;
//! a data column's bytes beyond its length are zero for the math.

use crate::error::RaidzError;
use crate::gf::{gf_matrix_invert, gf_mul, gf_mul_pow2_word, gf_mul_table, gf_pow2};
use crate::map::{RaidzMap, PARITY_MAX};

const WORD_BYTES: usize = 8;

fn word_load(bytes: &[u8]) -> u64 {
    let mut word = [0u8; WORD_BYTES];
    word.copy_from_slice(bytes);
    u64::from_ne_bytes(word)
}

/// destination ^= source, lengths equal.
fn xor_into(destination: &mut [u8], source: &[u8]) {
    debug_assert_eq!(destination.len(), source.len());
    let mut destination_words = destination.chunks_exact_mut(WORD_BYTES);
    let mut source_words = source.chunks_exact(WORD_BYTES);
    for (d, s) in (&mut destination_words).zip(&mut source_words) {
        d.copy_from_slice(&(word_load(d) ^ word_load(s)).to_ne_bytes());
    }
    let tails = destination_words.into_remainder().iter_mut();
    for (d, s) in tails.zip(source_words.remainder()) {
        *d ^= s;
    }
}

/// destination ^= coefficient · source, lengths equal.
fn mul_xor_into(destination: &mut [u8], source: &[u8], coefficient: u8) {
    debug_assert_eq!(destination.len(), source.len());
    match coefficient {
        0 => {}
        1 => xor_into(destination, source),
        _ => {
            let table = gf_mul_table(coefficient);
            for (d, s) in destination.iter_mut().zip(source) {
                *d ^= table[*s as usize];
            }
        }
    }
}

/// One Horner step for the parity row with multiplier 2^POWER:
/// accumulator = accumulator · 2^POWER + column, the column zero-padded.
fn horner_step<const POWER: usize>(accumulator: &mut [u8], column: &[u8]) {
    assert!(column.len() <= accumulator.len());
    let (head, tail) = accumulator.split_at_mut(column.len());
    if POWER == 0 {
        xor_into(head, column);
        return;
    }
    let mut head_words = head.chunks_exact_mut(WORD_BYTES);
    let mut column_words = column.chunks_exact(WORD_BYTES);
    for (a, c) in (&mut head_words).zip(&mut column_words) {
        let word = gf_mul_pow2_word(word_load(a), POWER) ^ word_load(c);
        a.copy_from_slice(&word.to_ne_bytes());
    }
    let multiplier = gf_pow2(POWER);
    let head_tails = head_words.into_remainder().iter_mut();
    for (a, c) in head_tails.zip(column_words.remainder()) {
        *a = gf_mul(*a, multiplier) ^ c;
    }
    let mut tail_words = tail.chunks_exact_mut(WORD_BYTES);
    for a in &mut tail_words {
        a.copy_from_slice(&gf_mul_pow2_word(word_load(a), POWER).to_ne_bytes());
    }
    for a in tail_words.into_remainder() {
        *a = gf_mul(*a, multiplier);
    }
}

/// Parity rows 0..row_count (P, Q, R) of `length_bytes` over the data
/// columns; an empty column slice stands for a column of zeros.
fn parity_generate(data: &[&[u8]], length_bytes: usize, row_count: usize) -> Vec<Vec<u8>> {
    assert!(row_count <= PARITY_MAX);
    let mut rows = vec![vec![0u8; length_bytes]; row_count];
    for column in data {
        for (row, accumulator) in rows.iter_mut().enumerate() {
            match row {
                0 => horner_step::<0>(accumulator, column),
                1 => horner_step::<1>(accumulator, column),
                _ => horner_step::<2>(accumulator, column),
            }
        }
    }
    rows
}

impl RaidzMap {
    fn column_length_check(&self, column: usize, actual_bytes: usize) -> Result<(), RaidzError> {
        let expected_bytes = self.columns[column].size_bytes;
        if actual_bytes as u64 != expected_bytes {
            return Err(RaidzError::ColumnLengthMismatch {
                column,
                expected_bytes,
                actual_bytes: actual_bytes as u64,
            });
        }
        Ok(())
    }

    fn column_count_check(&self, actual: usize) -> Result<(), RaidzError> {
        if actual != self.columns.len() {
            return Err(RaidzError::ColumnCountMismatch {
                expected: self.columns.len(),
                actual,
            });
        }
        Ok(())
    }

    /// One buffer per column: parity computed, data columns sliced from
    /// `data`, which must be exactly `psize_bytes` long.
    pub fn try_split(&self, data: &[u8]) -> Result<Vec<Vec<u8>>, RaidzError> {
        if data.len() as u64 != self.psize_bytes {
            return Err(RaidzError::DataLengthMismatch {
                expected_bytes: self.psize_bytes,
                actual_bytes: data.len() as u64,
            });
        }
        let mut data_columns: Vec<&[u8]> = Vec::with_capacity(self.data_column_count());
        let mut rest = data;
        for column in &self.columns[self.parity..] {
            let (head, tail) = rest.split_at(column.size_bytes as usize);
            data_columns.push(head);
            rest = tail;
        }
        debug_assert!(rest.is_empty());
        let parity_length_bytes = self.columns[0].size_bytes as usize;
        let mut result = parity_generate(&data_columns, parity_length_bytes, self.parity);
        result.extend(data_columns.iter().map(|column| column.to_vec()));
        Ok(result)
    }

    /// [`RaidzMap::try_split`] for the engine's own buffers.
    ///
    /// # Panics
    /// If `data.len() != psize_bytes` (a caller bug, not bad disk data).
    pub fn split(&self, data: &[u8]) -> Vec<Vec<u8>> {
        match self.try_split(data) {
            Ok(columns) => columns,
            Err(error) => panic!("RaidzMap::split: {error}"),
        }
    }

    /// The block back from its columns (parity columns are not read), with
    /// every column's length checked.
    pub fn try_assemble(&self, columns: &[Vec<u8>]) -> Result<Vec<u8>, RaidzError> {
        self.column_count_check(columns.len())?;
        for (index, column) in columns.iter().enumerate() {
            self.column_length_check(index, column.len())?;
        }
        let mut data = Vec::with_capacity(self.psize_bytes as usize);
        for column in &columns[self.parity..] {
            data.extend_from_slice(column);
        }
        Ok(data)
    }

    /// [`RaidzMap::try_assemble`] for columns that came from `split` or
    /// `reconstruct` (so already the right lengths).
    ///
    /// # Panics
    /// If the column count or a column length is not what the map says.
    pub fn assemble(&self, columns: &[Vec<u8>]) -> Vec<u8> {
        match self.try_assemble(columns) {
            Ok(data) => data,
            Err(error) => panic!("RaidzMap::assemble: {error}"),
        }
    }

    /// Fills in every `None` column (data or parity, any mix, at most
    /// `parity` of them) from the others. Present columns are checked for
    /// length and left untouched; on error nothing is changed.
    pub fn reconstruct(&self, columns: &mut [Option<Vec<u8>>]) -> Result<(), RaidzError> {
        self.column_count_check(columns.len())?;
        for (index, column) in columns.iter().enumerate() {
            if let Some(column) = column {
                self.column_length_check(index, column.len())?;
            }
        }
        let missing: Vec<usize> = (0..columns.len())
            .filter(|&i| columns[i].is_none())
            .collect();
        if missing.len() > self.parity {
            return Err(RaidzError::TooManyMissing {
                missing: missing.len(),
                parity: self.parity,
            });
        }
        let missing_data: Vec<usize> = missing
            .iter()
            .filter(|&&index| index >= self.parity)
            .map(|&index| index - self.parity)
            .collect();
        let missing_parity: Vec<usize> = missing
            .iter()
            .copied()
            .filter(|&index| index < self.parity)
            .collect();

        if !missing_data.is_empty() {
            let rebuilt = self.data_rebuild(columns, &missing_data);
            for (data_index, column) in missing_data.iter().zip(rebuilt) {
                columns[self.parity + data_index] = Some(column);
            }
        }
        if let Some(&row_last) = missing_parity.last() {
            let data: Vec<&[u8]> = columns[self.parity..]
                .iter()
                .map(|column| column.as_deref().unwrap_or_default())
                .collect();
            let parity_length_bytes = self.columns[0].size_bytes as usize;
            let mut parity = parity_generate(&data, parity_length_bytes, row_last + 1);
            for &row in missing_parity.iter().rev() {
                columns[row] = Some(parity.swap_remove(row));
            }
        }
        Ok(())
    }

    /// Solves for the missing data columns (indices into the data columns),
    /// given all present columns have the right lengths and enough parity
    /// rows are present.
    fn data_rebuild(&self, columns: &[Option<Vec<u8>>], missing_data: &[usize]) -> Vec<Vec<u8>> {
        let missing_count = missing_data.len();
        let data_count = self.data_column_count();
        let rows: Vec<usize> = (0..self.parity)
            .filter(|&row| columns[row].is_some())
            .take(missing_count)
            .collect();
        assert_eq!(
            rows.len(),
            missing_count,
            "caller checked missing <= parity"
        );

        // Syndromes: Horner over the present data, missing columns as zero,
        // plus the stored parity.
        let data: Vec<&[u8]> = columns[self.parity..]
            .iter()
            .map(|column| column.as_deref().unwrap_or_default())
            .collect();
        let parity_length_bytes = self.columns[0].size_bytes as usize;
        let row_count = rows[missing_count - 1] + 1;
        let mut syndromes = parity_generate(&data, parity_length_bytes, row_count);
        for &row in &rows {
            let stored = columns[row].as_deref().unwrap_or_default();
            xor_into(&mut syndromes[row], stored);
        }

        let mut matrix = [[0u8; PARITY_MAX]; PARITY_MAX];
        for (matrix_row, &row) in matrix.iter_mut().zip(&rows) {
            for (entry, &data_index) in matrix_row.iter_mut().zip(missing_data) {
                *entry = gf_pow2(row * (data_count - 1 - data_index));
            }
        }
        let inverse = gf_matrix_invert(&matrix, missing_count)
            .expect("raidz matrices are invertible for <= 254 data columns (see module header)");

        missing_data
            .iter()
            .zip(inverse.iter())
            .map(|(&data_index, inverse_row)| {
                let length_bytes = self.columns[self.parity + data_index].size_bytes as usize;
                let mut column = vec![0u8; length_bytes];
                for (&coefficient, &row) in inverse_row.iter().zip(&rows) {
                    mul_xor_into(&mut column, &syndromes[row][..length_bytes], coefficient);
                }
                column
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::raidz_map;

    /// Direct evaluation of the parity definitions, byte by byte.
    fn parity_reference(data: &[&[u8]], length_bytes: usize, row: usize) -> Vec<u8> {
        let count = data.len();
        (0..length_bytes)
            .map(|position| {
                data.iter().enumerate().fold(0u8, |sum, (index, column)| {
                    let byte = column.get(position).copied().unwrap_or(0);
                    sum ^ gf_mul(gf_pow2(row * (count - 1 - index)), byte)
                })
            })
            .collect()
    }

    // Why: the word-at-a-time Horner kernel (with odd lengths, short columns
    // and byte tails) must equal the textbook sum Σ g^(n-1-i)·D_i.
    #[test]
    fn parity_generate_matches_definition() {
        let columns: Vec<Vec<u8>> = [21usize, 21, 13, 8, 0]
            .iter()
            .enumerate()
            .map(|(seed, &length)| {
                (0..length)
                    .map(|i| (i * 37 + seed * 101 + 7) as u8)
                    .collect()
            })
            .collect();
        let data: Vec<&[u8]> = columns.iter().map(|c| c.as_slice()).collect();
        let parity = parity_generate(&data, 21, 3);
        for (row, computed) in parity.iter().enumerate() {
            assert_eq!(computed, &parity_reference(&data, 21, row), "row {row}");
        }
    }

    // Why: a known tiny stripe, checkable by hand: raidz3 of 5 children,
    // 2 data sectors; one byte differs so P/Q/R each show their multiplier.
    #[test]
    fn split_small_raidz3_by_hand() {
        let map = raidz_map(5, 3, 9, 0, 1024).expect("valid");
        let mut data = vec![0u8; 1024];
        data[0] = 1; // D_0[0] = 1, D_1[0] = 0, n = 2
        data[512] = 3; // D_1[0] = 3
        let columns = map.split(&data);
        assert_eq!(columns.len(), 5);
        // P = 1 ^ 3 = 2; Q = 2·1 ^ 3 = 1; R = 4·1 ^ 3 = 7.
        assert_eq!((columns[0][0], columns[1][0], columns[2][0]), (2, 1, 7));
        assert_eq!(map.assemble(&columns), data);
    }

    // Why: rebuilding a parity column alone must give back the same bytes
    // that split wrote (scrub/resilver of a parity child relies on it).
    #[test]
    fn reconstruct_parity_only_matches_split() {
        let map = raidz_map(7, 3, 9, 512 * 3, 512 * 9).expect("valid");
        let data: Vec<u8> = (0..map.psize_bytes as usize)
            .map(|i| (i * 13 + 5) as u8)
            .collect();
        let columns = map.split(&data);
        let mut partial: Vec<Option<Vec<u8>>> = columns.iter().cloned().map(Some).collect();
        partial[0] = None;
        partial[1] = None;
        partial[2] = None;
        map.reconstruct(&mut partial)
            .expect("three parity missing is fine");
        let rebuilt: Vec<Vec<u8>> = partial.into_iter().flatten().collect();
        assert_eq!(rebuilt, columns);
    }
}
