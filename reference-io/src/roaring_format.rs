//! The portable 32-bit roaring serialization, the one byte format Lance uses for every set of
//! row offsets or fragment ids it stores: overlay coverage (`DataOverlayFile.shared_offset_bitmap`,
//! `FieldCoverage.offset_bitmaps`), `.bin` deletion files and `IndexMetadata.fragment_bitmap`.
//!
//! Invariant: [`read_bitmap`] returns a bitmap only for bytes that are exactly one valid
//! serialization, checked here rule by rule (the `roaring` crate only materializes bytes this
//! module has already accepted, which keeps run containers compact so memory stays proportional
//! to the input); and [`write_bitmap`] / [`write_bitmap_without_runs`] emit, for a given set,
//! the bytes Lance 14 emits for the same set, so golden bytes can be compared exactly.
//!
//! # Layout
//!
//! A bitmap is split by the high 16 bits of each value into *containers* (key = high bits),
//! each holding the low 16 bits of its values:
//!
//! ```text
//! cookie 12346 (u32) | container count (u32) | per container: key u16, cardinality-1 u16
//!                    | per container: byte offset u32 | containers...
//! cookie 12347 | (count-1) << 16 (u32)      | run flags, ceil(count/8) bytes, LSB first
//!                    | descriptors | offsets only when count >= 4 | containers...
//! ```
//!
//! A container is a *run* container when its flag is set (u16 run count, then per run u16
//! start and u16 length-1), else an *array* when its cardinality is at most 4096 (sorted u16
//! values) and a *bitset* otherwise (8192 bytes, bit `v` = value `v`, LSB first). All integers
//! are little-endian; offsets count from the first byte of the bitmap.
//!
//! # Strictness (decisions where the format's reference implementations are lenient)
//!
//! - Empty input is rejected: an empty bitmap serializes to 8 bytes. A caller whose message
//!   field may be empty (Lance reads an empty `IndexMetadata.fragment_bitmap` as "no bitmap")
//!   handles that before calling.
//! - Trailing bytes after the last container are rejected: the bitmap is always a whole
//!   protobuf `bytes` field or a whole file, so extra bytes mean corruption. Lance's reader
//!   (`RoaringBitmap::deserialize_from`) ignores them.
//! - Run flags past the last container, offset-table entries that do not point at their
//!   container, and cardinalities that disagree with the container are rejected.
//! - Runs must be maximal: touching runs (`0..=1` then `2..=3`) are rejected, as roaring-rs
//!   (and so Lance) rejects them.
//! - A run container's runs must cover exactly the descriptor's cardinality; roaring-rs does
//!   not compare the two.
//!
//! # Which container Lance writes
//!
//! Lance 14 (roaring-rs 0.11, whose `optimize` and `serialize_into` match the 0.12 in this
//! workspace) calls `optimize()` before serializing overlay coverage and index fragment bitmaps,
//! but *not* before serializing a `.bin` deletion vector. For a container of `c` values forming
//! `r` runs, with `natural = 2c` bytes as an array (`c <= 4096`) or `8192` as a bitset:
//!
//! - [`write_bitmap`] (optimized): a run container iff `2 + 4r < natural`, else the natural form.
//! - [`write_bitmap_without_runs`]: always the natural form, so cookie 12346.
//!
//! On a tie (`2 + 4r == 2c`, e.g. `{0, 1, 2}`) the natural form wins, as observed in Lance's
//! fragment bitmap for fragments `{0,1,2}`. That matches Lance whenever its in-memory bitmap
//! was built by inserting values; one that already held a run container at a tie (for example
//! deserialized from another writer's bytes) would keep the run. The output is a function of
//! the set alone.

use roaring::RoaringBitmap;

use super::{BitmapProblem, DatasetIoError};

/// Cookie of the format without run containers; followed by a u32 container count.
pub const SERIAL_COOKIE_NO_RUNCONTAINER: u32 = 12346;
/// Cookie (low 16 bits) of the format with run containers; high 16 bits hold count - 1.
pub const SERIAL_COOKIE: u16 = 12347;
/// In the run format, the offset table is present only from this many containers on.
pub const NO_OFFSET_THRESHOLD: usize = 4;
/// The largest cardinality stored as an array container (without runs).
pub const ARRAY_LIMIT: u32 = 4096;
/// Size of a bitset container.
const BITSET_BYTES: usize = 8192;
/// The most containers a 32-bit bitmap can have.
const MAX_CONTAINERS: u64 = 1 << 16;

/// Decodes one serialized bitmap that fills `bytes` exactly.
///
/// `file` and `field` only label errors: the file holding the bytes (a manifest or a deletion
/// file) and the message field (e.g. `DataOverlayFile.shared_offset_bitmap`).
pub fn read_bitmap(bytes: &[u8], file: &str, field: &str) -> Result<RoaringBitmap, DatasetIoError> {
    let malformed = |problem| DatasetIoError::MalformedBitmap {
        file: file.to_string(),
        field: field.to_string(),
        problem,
    };
    validate(bytes).map_err(malformed)?;
    // The bytes are now known to be one valid serialization; the crate builds the in-memory
    // form, keeping run containers as runs. Its checks are a subset of ours, so this cannot
    // fail; if it ever did, the bytes are still reported as malformed, never trusted.
    RoaringBitmap::deserialize_from(bytes)
        .map_err(|e| malformed(BitmapProblem::Unmaterializable(e.to_string())))
}

/// Serializes `bitmap` the way Lance 14 serializes overlay coverage and index fragment
/// bitmaps: `optimize()` (run containers where they are strictly smaller), then the portable
/// format.
pub fn write_bitmap(bitmap: &RoaringBitmap) -> Vec<u8> {
    encode(bitmap, true)
}

/// Serializes `bitmap` the way Lance 14 serializes a `.bin` deletion vector: arrays and
/// bitsets only, cookie 12346, offset table always present.
pub fn write_bitmap_without_runs(bitmap: &RoaringBitmap) -> Vec<u8> {
    encode(bitmap, false)
}

/// One container as it will be written.
enum Container {
    Array(Vec<u16>),
    Bitset(Vec<u16>),
    /// Inclusive `(start, end)` pairs.
    Run(Vec<(u16, u16)>),
}

impl Container {
    /// Chooses the form of one container's sorted, distinct low halves.
    fn choose(values: Vec<u16>, runs_allowed: bool) -> Container {
        let natural_bytes = if values.len() <= ARRAY_LIMIT as usize {
            2 * values.len()
        } else {
            BITSET_BYTES
        };
        let runs = runs_of(&values);
        if runs_allowed && 2 + 4 * runs.len() < natural_bytes {
            Container::Run(runs)
        } else if values.len() <= ARRAY_LIMIT as usize {
            Container::Array(values)
        } else {
            Container::Bitset(values)
        }
    }

    fn byte_len(&self) -> usize {
        match self {
            Container::Array(values) => 2 * values.len(),
            Container::Bitset(_) => BITSET_BYTES,
            Container::Run(runs) => 2 + 4 * runs.len(),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Container::Array(values) => {
                for v in values {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Container::Bitset(values) => {
                let mut words = [0u64; BITSET_BYTES / 8];
                for &v in values {
                    words[usize::from(v / 64)] |= 1 << (v % 64);
                }
                for w in words {
                    out.extend_from_slice(&w.to_le_bytes());
                }
            }
            Container::Run(runs) => {
                // At most 32768 runs fit in 65536 values, so the count fits in a u16.
                out.extend_from_slice(&(runs.len() as u16).to_le_bytes());
                for &(start, end) in runs {
                    out.extend_from_slice(&start.to_le_bytes());
                    out.extend_from_slice(&(end - start).to_le_bytes());
                }
            }
        }
    }
}

/// Maximal runs of consecutive values, as inclusive `(start, end)` pairs.
fn runs_of(values: &[u16]) -> Vec<(u16, u16)> {
    let mut runs: Vec<(u16, u16)> = Vec::new();
    for &v in values {
        match runs.last_mut() {
            Some((_, end)) if u32::from(*end) + 1 == u32::from(v) => *end = v,
            _ => runs.push((v, v)),
        }
    }
    runs
}

fn encode(bitmap: &RoaringBitmap, runs_allowed: bool) -> Vec<u8> {
    // Group values by key; `iter` yields them in increasing order.
    let mut groups: Vec<(u16, Vec<u16>)> = Vec::new();
    for value in bitmap {
        let (key, low) = ((value >> 16) as u16, value as u16);
        match groups.last_mut() {
            Some((k, lows)) if *k == key => lows.push(low),
            _ => groups.push((key, vec![low])),
        }
    }
    let containers: Vec<(u16, usize, Container)> = groups
        .into_iter()
        .map(|(key, lows)| (key, lows.len(), Container::choose(lows, runs_allowed)))
        .collect();
    let count = containers.len();
    let has_runs = containers
        .iter()
        .any(|(_, _, c)| matches!(c, Container::Run(_)));
    let has_offsets = !has_runs || count >= NO_OFFSET_THRESHOLD;

    let mut out = Vec::new();
    if has_runs {
        // `has_runs` implies 1 <= count <= 65536, so count - 1 fits in the high half.
        let cookie = u32::from(SERIAL_COOKIE) | (((count - 1) as u32) << 16);
        out.extend_from_slice(&cookie.to_le_bytes());
        let mut flags = vec![0u8; count.div_ceil(8)];
        for (i, (_, _, c)) in containers.iter().enumerate() {
            if matches!(c, Container::Run(_)) {
                flags[i / 8] |= 1 << (i % 8);
            }
        }
        out.extend_from_slice(&flags);
    } else {
        out.extend_from_slice(&SERIAL_COOKIE_NO_RUNCONTAINER.to_le_bytes());
        out.extend_from_slice(&(count as u32).to_le_bytes());
    }
    for (key, cardinality, _) in &containers {
        out.extend_from_slice(&key.to_le_bytes());
        // A container holds 1..=65536 values, so cardinality - 1 fits in a u16.
        out.extend_from_slice(&((cardinality - 1) as u16).to_le_bytes());
    }
    if has_offsets {
        let mut offset = out.len() + 4 * count;
        for (_, _, c) in &containers {
            out.extend_from_slice(&(offset as u32).to_le_bytes());
            offset += c.byte_len();
        }
    }
    for (_, _, c) in &containers {
        c.write(&mut out);
    }
    out
}

/// A bounds-checked little-endian reader over the input.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, what: &'static str, needed: usize) -> Result<&'a [u8], BitmapProblem> {
        let available = self.bytes.len() - self.pos;
        let truncated = BitmapProblem::Truncated {
            what,
            at: self.pos,
            needed,
            available,
        };
        let end = self.pos.checked_add(needed).ok_or(truncated.clone())?;
        let slice = self.bytes.get(self.pos..end).ok_or(truncated)?;
        self.pos = end;
        Ok(slice)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, BitmapProblem> {
        let b = self.take(what, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, BitmapProblem> {
        let b = self.take(what, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Little-endian u16 number `i` of `bytes` (callers index within a slice they sized).
fn u16_at(bytes: &[u8], i: usize) -> Option<u16> {
    let b = bytes.get(2 * i..2 * i + 2)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

/// Checks every rule of the format; returns the first violation.
fn validate(bytes: &[u8]) -> Result<(), BitmapProblem> {
    if bytes.is_empty() {
        return Err(BitmapProblem::Empty);
    }
    let mut cur = Cursor { bytes, pos: 0 };
    let cookie = cur.u32("cookie")?;
    let (count, run_flags): (usize, Option<&[u8]>) = if cookie == SERIAL_COOKIE_NO_RUNCONTAINER {
        let count = u64::from(cur.u32("container count")?);
        if count > MAX_CONTAINERS {
            return Err(BitmapProblem::TooManyContainers(count));
        }
        (count as usize, None)
    } else if cookie & 0xFFFF == u32::from(SERIAL_COOKIE) {
        let count = (cookie >> 16) as usize + 1;
        (count, Some(cur.take("run flags", count.div_ceil(8))?))
    } else {
        return Err(BitmapProblem::UnknownCookie(cookie));
    };
    let is_run =
        |i: usize| run_flags.is_some_and(|f| f.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0));
    if let Some(index) = (count..count.div_ceil(8) * 8).find(|&i| is_run(i)) {
        return Err(BitmapProblem::RunFlagPastEnd {
            index,
            containers: count,
        });
    }
    // Descriptors and offsets are sliced (not copied) only after the bytes are known to exist.
    let descriptors = cur.take("container descriptors", 4 * count)?;
    let has_offsets = run_flags.is_none() || count >= NO_OFFSET_THRESHOLD;
    let offsets = if has_offsets {
        Some(cur.take("offset table", 4 * count)?)
    } else {
        None
    };

    let mut previous_key: Option<u16> = None;
    for index in 0..count {
        let key = u16_at(descriptors, 2 * index).unwrap_or(0);
        let declared = u32::from(u16_at(descriptors, 2 * index + 1).unwrap_or(0)) + 1;
        if let Some(previous) = previous_key {
            if key <= previous {
                return Err(BitmapProblem::KeysNotIncreasing {
                    index,
                    key,
                    previous,
                });
            }
        }
        previous_key = Some(key);
        if let Some(offsets) = offsets {
            let stated = offsets
                .get(4 * index..4 * index + 4)
                .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            if stated as usize != cur.pos {
                return Err(BitmapProblem::WrongOffset {
                    index,
                    stated,
                    actual: cur.pos,
                });
            }
        }
        let found = if is_run(index) {
            validate_runs(&mut cur, index)?
        } else if declared <= ARRAY_LIMIT {
            validate_array(&mut cur, index, declared)?
        } else {
            let words = cur.take("bitset container", BITSET_BYTES)?;
            words.iter().map(|b| b.count_ones()).sum()
        };
        if found != declared {
            return Err(BitmapProblem::CardinalityMismatch {
                index,
                declared,
                found,
            });
        }
    }
    match bytes.len() - cur.pos {
        0 => Ok(()),
        extra => Err(BitmapProblem::TrailingBytes(extra)),
    }
}

/// Checks one array container of `declared` values; returns how many it holds.
fn validate_array(cur: &mut Cursor<'_>, index: usize, declared: u32) -> Result<u32, BitmapProblem> {
    let values = cur.take("array container", 2 * declared as usize)?;
    let mut previous: Option<u16> = None;
    for i in 0..declared as usize {
        let value = u16_at(values, i).unwrap_or(0);
        if let Some(previous) = previous {
            if value <= previous {
                return Err(BitmapProblem::ArrayNotIncreasing {
                    index,
                    value,
                    previous,
                });
            }
        }
        previous = Some(value);
    }
    Ok(declared)
}

/// Checks one run container; returns how many values its runs cover.
fn validate_runs(cur: &mut Cursor<'_>, index: usize) -> Result<u32, BitmapProblem> {
    let run_count = cur.u16("run count")?;
    if run_count == 0 {
        return Err(BitmapProblem::NoRuns { index });
    }
    let runs = cur.take("runs", 4 * usize::from(run_count))?;
    let mut previous_end: Option<u16> = None;
    let mut covered = 0u32;
    for i in 0..usize::from(run_count) {
        let start = u16_at(runs, 2 * i).unwrap_or(0);
        let length_minus_one = u16_at(runs, 2 * i + 1).unwrap_or(0);
        let end = start
            .checked_add(length_minus_one)
            .ok_or(BitmapProblem::RunPastEnd {
                index,
                start,
                length_minus_one,
            })?;
        if let Some(previous_end) = previous_end {
            // Runs are maximal: a run that touches the previous one would be the same run.
            if u32::from(start) <= u32::from(previous_end) + 1 {
                return Err(BitmapProblem::RunsNotIncreasing {
                    index,
                    start,
                    previous_end,
                });
            }
        }
        previous_end = Some(end);
        covered += u32::from(length_minus_one) + 1;
    }
    Ok(covered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn read(bytes: &[u8]) -> Result<RoaringBitmap, BitmapProblem> {
        match read_bitmap(bytes, "f", "Msg.field") {
            Ok(b) => Ok(b),
            Err(DatasetIoError::MalformedBitmap { problem, .. }) => Err(problem),
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }

    /// What roaring-rs (the library Lance uses) writes for a bitmap built by inserting values.
    fn lance_optimized(bitmap: &RoaringBitmap) -> Vec<u8> {
        let mut b: RoaringBitmap = bitmap.iter().collect();
        b.optimize();
        let mut out = Vec::new();
        b.serialize_into(&mut out).unwrap();
        out
    }

    fn lance_unoptimized(bitmap: &RoaringBitmap) -> Vec<u8> {
        let b: RoaringBitmap = bitmap.iter().collect();
        let mut out = Vec::new();
        b.serialize_into(&mut out).unwrap();
        out
    }

    #[test]
    fn facts_sheet_coverage_sample_is_one_run() {
        // covers: OVL-LAYOUT-6
        // Lance 14 stored coverage 50..150 as these bytes (facts sheet §5).
        let bytes = hex("3b30 0000 01 0000 6300 0100 3200 6300");
        let bitmap: RoaringBitmap = (50..150).collect();
        assert_eq!(write_bitmap(&bitmap), bytes);
        assert_eq!(read(&bytes).unwrap(), bitmap);
    }

    #[test]
    fn array_only_bitmap_uses_cookie_12346_with_offsets() {
        // covers: OVL-LAYOUT-6
        let bitmap: RoaringBitmap = [1u32, 3, 70_000].into_iter().collect();
        let bytes = write_bitmap(&bitmap);
        let expected =
            hex("3a30 0000 0200 0000  0000 0100 0100 0000  1800 0000 1c00 0000  0100 0300  7011");
        assert_eq!(bytes, expected);
        assert_eq!(read(&bytes).unwrap(), bitmap);
    }

    #[test]
    fn scattered_dense_container_is_a_bitset() {
        // covers: OVL-LAYOUT-6
        // 5000 even values: 5000 runs would take 20002 bytes, so the bitset (8192) stays.
        let bitmap: RoaringBitmap = (0..10_000).step_by(2).collect();
        let bytes = write_bitmap(&bitmap);
        assert_eq!(bytes.len(), 8 + 8 + BITSET_BYTES);
        assert_eq!(
            &bytes[..16],
            &hex("3a30 0000 0100 0000 0000 8713 1000 0000")[..]
        );
        assert_eq!(bytes[16], 0b0101_0101);
        assert_eq!(read(&bytes).unwrap(), bitmap);
    }

    #[test]
    fn four_containers_with_runs_carry_an_offset_table() {
        // covers: OVL-LAYOUT-6
        // key 0: run 0..=99; key 1: array {5, 9}; key 2: full run; key 3: bitset of evens.
        let mut bitmap: RoaringBitmap = (0..100).collect();
        bitmap.insert(65_536 + 5);
        bitmap.insert(65_536 + 9);
        bitmap.insert_range(2 * 65_536..3 * 65_536);
        bitmap.extend((3 * 65_536..4 * 65_536).step_by(2));
        let bytes = write_bitmap(&bitmap);
        // cookie 12347 with count-1 = 3, run flags 0b0101.
        assert_eq!(&bytes[..5], &hex("3b30 0300 05")[..]);
        // descriptors then offsets: header = 4 + 1 + 16 + 16 = 37.
        let offsets: Vec<u32> = (0..4)
            .map(|i| u32::from_le_bytes(bytes[21 + 4 * i..25 + 4 * i].try_into().unwrap()))
            .collect();
        assert_eq!(offsets, vec![37, 43, 47, 53]);
        assert_eq!(bytes.len(), 53 + BITSET_BYTES);
        assert_eq!(read(&bytes).unwrap(), bitmap);
        assert_eq!(bytes, lance_optimized(&bitmap));
    }

    #[test]
    fn three_containers_with_runs_have_no_offset_table() {
        // covers: OVL-LAYOUT-6
        let mut bitmap: RoaringBitmap = (0..100).collect();
        bitmap.insert(65_536 + 5);
        bitmap.insert_range(2 * 65_536..2 * 65_536 + 10);
        let bytes = write_bitmap(&bitmap);
        // 4 + 1 + 12, then run(2+4) + array(2) + run(2+4)
        assert_eq!(bytes.len(), 17 + 6 + 2 + 6);
        assert_eq!(read(&bytes).unwrap(), bitmap);
    }

    #[test]
    fn empty_bitmap_is_eight_bytes_and_empty_input_is_rejected() {
        // covers: OVL-COV-4, OVL-LAYOUT-6
        let bytes = write_bitmap(&RoaringBitmap::new());
        assert_eq!(bytes, hex("3a30 0000 0000 0000"));
        assert!(read(&bytes).unwrap().is_empty());
        assert_eq!(read(&[]), Err(BitmapProblem::Empty));
    }

    #[test]
    fn tie_between_array_and_run_keeps_the_array() {
        // {0,1,2}: 6 bytes either way. Lance's index fragment bitmap for fragments 0..=2 is
        // an array (see tests/data/lance14_deletions/index_fragments_0_to_2.bin).
        let bitmap: RoaringBitmap = (0..3).collect();
        assert_eq!(
            write_bitmap(&bitmap),
            hex("3a30 0000 0100 0000 0000 0200 1000 0000 0000 0100 0200")
        );
        let four: RoaringBitmap = (0..4).collect();
        assert_eq!(
            write_bitmap(&four),
            hex("3b30 0000 01 0000 0300 0100 0000 0300")
        );
    }

    #[test]
    fn deletion_form_never_uses_runs() {
        let bitmap: RoaringBitmap = (10_000..16_000).collect();
        let bytes = write_bitmap_without_runs(&bitmap);
        assert_eq!(&bytes[..4], &hex("3a30 0000")[..]);
        assert_eq!(bytes.len(), 16 + BITSET_BYTES);
        assert_eq!(bytes, lance_unoptimized(&bitmap));
        assert!(write_bitmap(&bitmap).len() < 20);
    }

    #[test]
    fn rejects_each_broken_rule() {
        // covers: OVL-LAYOUT-6
        let cases: Vec<(&str, Vec<u8>, BitmapProblem)> = vec![
            (
                "bad cookie",
                hex("3c30 0000 0000 0000"),
                BitmapProblem::UnknownCookie(12348),
            ),
            (
                "huge count",
                hex("3a30 0000 0100 0100"),
                BitmapProblem::TooManyContainers(65_537),
            ),
            (
                "count without descriptors",
                hex("3a30 0000 ffff 0000"),
                BitmapProblem::Truncated {
                    what: "container descriptors",
                    at: 8,
                    needed: 262_140,
                    available: 0,
                },
            ),
            (
                "keys out of order",
                hex("3a30 0000 0200 0000 0100 0000 0000 0000 1800 0000 1a00 0000 0100 0100"),
                BitmapProblem::KeysNotIncreasing {
                    index: 1,
                    key: 0,
                    previous: 1,
                },
            ),
            (
                "array not increasing",
                hex("3a30 0000 0100 0000 0000 0100 1000 0000 0500 0500"),
                BitmapProblem::ArrayNotIncreasing {
                    index: 0,
                    value: 5,
                    previous: 5,
                },
            ),
            (
                "wrong offset",
                hex("3a30 0000 0100 0000 0000 0000 1100 0000 0500"),
                BitmapProblem::WrongOffset {
                    index: 0,
                    stated: 17,
                    actual: 16,
                },
            ),
            (
                "run crosses 65535",
                hex("3b30 0000 01 0000 0100 0100 ffff 0100"),
                BitmapProblem::RunPastEnd {
                    index: 0,
                    start: 65_535,
                    length_minus_one: 1,
                },
            ),
            (
                "overlapping runs",
                hex("3b30 0000 01 0000 0700 0200 0000 0300 0300 0300"),
                BitmapProblem::RunsNotIncreasing {
                    index: 0,
                    start: 3,
                    previous_end: 3,
                },
            ),
            (
                "zero runs",
                hex("3b30 0000 01 0000 0000 0000"),
                BitmapProblem::NoRuns { index: 0 },
            ),
            (
                "run cardinality",
                hex("3b30 0000 01 0000 0400 0100 0000 0300"),
                BitmapProblem::CardinalityMismatch {
                    index: 0,
                    declared: 5,
                    found: 4,
                },
            ),
            (
                "run flag past end",
                hex("3b30 0000 03 0000 0000 0100 0000 0000"),
                BitmapProblem::RunFlagPastEnd {
                    index: 1,
                    containers: 1,
                },
            ),
            (
                "trailing",
                hex("3a30 0000 0000 0000 00"),
                BitmapProblem::TrailingBytes(1),
            ),
        ];
        for (name, bytes, problem) in cases {
            assert_eq!(read(&bytes), Err(problem), "{name}");
        }
    }

    #[test]
    fn touching_runs_are_rejected_like_roaring_rs_does() {
        let bytes = hex("3b30 0000 01 0000 0300 0200 0000 0100 0200 0100");
        assert_eq!(
            read(&bytes),
            Err(BitmapProblem::RunsNotIncreasing {
                index: 0,
                start: 2,
                previous_end: 1
            })
        );
        assert!(RoaringBitmap::deserialize_from(&bytes[..]).is_err());
    }

    #[test]
    fn run_cardinality_is_checked_although_roaring_rs_does_not() {
        let bytes = hex("3b30 0000 01 0000 0400 0100 0000 0300");
        assert!(read(&bytes).is_err());
        assert_eq!(
            RoaringBitmap::deserialize_from(&bytes[..]).unwrap().len(),
            4
        );
    }

    #[test]
    fn bitset_popcount_must_match_the_descriptor() {
        let mut bytes = write_bitmap(&(0..10_000).step_by(2).collect::<RoaringBitmap>());
        bytes[16] |= 0b10;
        assert_eq!(
            read(&bytes),
            Err(BitmapProblem::CardinalityMismatch {
                index: 0,
                declared: 5000,
                found: 5001
            })
        );
    }

    #[test]
    fn errors_name_file_field_and_class() {
        let err = read_bitmap(
            &[1, 2, 3],
            "_versions/1.manifest",
            "DataOverlayFile.shared_offset_bitmap",
        )
        .unwrap_err();
        assert_eq!(err.class(), lance_reference::error::ErrorClass::Malformed);
        assert_eq!(err.code(), "malformed_bitmap");
        let text = err.to_string();
        assert!(
            text.contains("_versions/1.manifest") && text.contains("shared_offset_bitmap"),
            "{text}"
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// Values clustered in a few containers, with runs, so all three forms occur.
        fn bitmaps() -> impl Strategy<Value = RoaringBitmap> {
            prop::collection::vec((0u32..5, 0u32..65_536, 1u32..6000, 1u32..4), 0..6).prop_map(
                |parts| {
                    let mut b = RoaringBitmap::new();
                    for (key, start, len, step) in parts {
                        let lo = key * 65_536 + start;
                        let hi = (lo + len).min(key * 65_536 + 65_536);
                        b.extend((lo..hi).step_by(step as usize));
                    }
                    b
                },
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

            #[test]
            fn writers_match_roaring_rs_and_read_back(bitmap in bitmaps()) {
                // covers: OVL-LAYOUT-6
                let optimized = write_bitmap(&bitmap);
                prop_assert_eq!(&optimized, &lance_optimized(&bitmap));
                prop_assert_eq!(read(&optimized).unwrap(), bitmap.clone());
                let plain = write_bitmap_without_runs(&bitmap);
                prop_assert_eq!(&plain, &lance_unoptimized(&bitmap));
                prop_assert_eq!(read(&plain).unwrap(), bitmap);
            }

            #[test]
            fn mutated_bytes_never_panic_and_accepted_bytes_materialize(
                bitmap in bitmaps(),
                edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
                cut in any::<prop::sample::Index>(),
                truncate in any::<bool>(),
            ) {
                let mut bytes = write_bitmap(&bitmap);
                for (at, byte) in edits {
                    let i = at.index(bytes.len());
                    bytes[i] = byte;
                }
                if truncate {
                    bytes.truncate(cut.index(bytes.len()));
                }
                if validate(&bytes).is_ok() {
                    // What this validator accepts, the roaring crate materializes, whole.
                    let theirs = RoaringBitmap::deserialize_from(&bytes[..]);
                    prop_assert!(theirs.is_ok(), "{:?}", theirs);
                    prop_assert_eq!(theirs.unwrap().serialized_size(), bytes.len());
                } else {
                    prop_assert!(read(&bytes).is_err());
                }
            }
        }
    }
}
