//! Just enough FlatBuffers to read and write the Arrow IPC metadata of a deletion file.
//!
//! Invariant: the reader never indexes outside the buffer it was given (every offset, vtable
//! entry, vector length and string length is checked against the buffer first) and reports
//! the first inconsistency as a message; the builder only emits offsets that point forward, so
//! the buffers it produces are valid FlatBuffers with every scalar aligned to its size.
//!
//! FileShape reminders (FlatBuffers binary format): a table starts with an `i32` giving the
//! distance back to its vtable; the vtable is `u16` vtable size, `u16` table size, then one
//! `u16` per field: the field's offset inside the table, 0 when absent. Reference fields hold a
//! `u32` distance forward to the target; vectors and strings start with a `u32` length.

/// A problem found while reading FlatBuffers data.
pub(super) type Problem = String;

fn read<const N: usize>(buf: &[u8], pos: usize, what: &str) -> Result<[u8; N], Problem> {
    pos.checked_add(N)
        .and_then(|end| buf.get(pos..end))
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            format!(
                "{what} at byte {pos} lies outside the {}-byte flatbuffer",
                buf.len()
            )
        })
}

fn read_u32(buf: &[u8], pos: usize, what: &str) -> Result<u32, Problem> {
    read::<4>(buf, pos, what).map(u32::from_le_bytes)
}

/// Follows the `u32` forward offset stored at `pos`.
fn follow(buf: &[u8], pos: usize, what: &str) -> Result<usize, Problem> {
    let offset = read_u32(buf, pos, what)?;
    pos.checked_add(offset as usize)
        .filter(|&target| target < buf.len())
        .ok_or_else(|| {
            format!("{what}: offset {offset} at byte {pos} points outside the flatbuffer")
        })
}

/// A table inside a flatbuffer.
#[derive(Clone, Copy)]
pub(super) struct Table<'a> {
    buf: &'a [u8],
    pos: usize,
    vtable: usize,
    vtable_len: usize,
    table_len: usize,
    name: &'static str,
}

impl<'a> Table<'a> {
    /// The root table of `buf`.
    pub(super) fn root(buf: &'a [u8], name: &'static str) -> Result<Table<'a>, Problem> {
        let pos = follow(buf, 0, name)?;
        Table::at(buf, pos, name)
    }

    fn at(buf: &'a [u8], pos: usize, name: &'static str) -> Result<Table<'a>, Problem> {
        let soffset = i64::from(i32::from_le_bytes(read::<4>(buf, pos, name)?));
        let vtable = usize::try_from(pos as i64 - soffset)
            .map_err(|_| format!("{name}: vtable offset {soffset} points before the flatbuffer"))?;
        let [a, b, c, d] = read::<4>(buf, vtable, name)?;
        let vtable_len = usize::from(u16::from_le_bytes([a, b]));
        let table_len = usize::from(u16::from_le_bytes([c, d]));
        if vtable_len < 4 || vtable_len % 2 != 0 || vtable.saturating_add(vtable_len) > buf.len() {
            return Err(format!(
                "{name}: vtable of {vtable_len} bytes at byte {vtable} is invalid"
            ));
        }
        if table_len < 4 || pos.saturating_add(table_len) > buf.len() {
            return Err(format!(
                "{name}: table of {table_len} bytes at byte {pos} is invalid"
            ));
        }
        Ok(Table {
            buf,
            pos,
            vtable,
            vtable_len,
            table_len,
            name,
        })
    }

    /// Absolute position of field `slot` holding `size` bytes, or `None` when absent.
    fn field(&self, slot: usize, size: usize) -> Result<Option<usize>, Problem> {
        let entry = 4 + 2 * slot;
        if entry >= self.vtable_len {
            return Ok(None);
        }
        let [a, b] = read::<2>(self.buf, self.vtable + entry, self.name)?;
        let offset = usize::from(u16::from_le_bytes([a, b]));
        if offset == 0 {
            return Ok(None);
        }
        if offset < 4 || offset + size > self.table_len {
            return Err(format!(
                "{}: field {slot} lies outside its table",
                self.name
            ));
        }
        Ok(Some(self.pos + offset))
    }

    fn scalar<const N: usize>(&self, slot: usize) -> Result<Option<[u8; N]>, Problem> {
        match self.field(slot, N)? {
            Some(pos) => read::<N>(self.buf, pos, self.name).map(Some),
            None => Ok(None),
        }
    }

    /// A `u8`/`bool`/union-type field, `default` when absent.
    pub(super) fn u8(&self, slot: usize, default: u8) -> Result<u8, Problem> {
        Ok(self.scalar::<1>(slot)?.map_or(default, |[b]| b))
    }

    /// An `i16` (short, enum) field, `default` when absent.
    pub(super) fn i16(&self, slot: usize, default: i16) -> Result<i16, Problem> {
        Ok(self.scalar::<2>(slot)?.map_or(default, i16::from_le_bytes))
    }

    /// An `i32` field, `default` when absent.
    pub(super) fn i32(&self, slot: usize, default: i32) -> Result<i32, Problem> {
        Ok(self.scalar::<4>(slot)?.map_or(default, i32::from_le_bytes))
    }

    /// An `i64` field, `default` when absent.
    pub(super) fn i64(&self, slot: usize, default: i64) -> Result<i64, Problem> {
        Ok(self.scalar::<8>(slot)?.map_or(default, i64::from_le_bytes))
    }

    /// A sub-table field.
    pub(super) fn table(
        &self,
        slot: usize,
        name: &'static str,
    ) -> Result<Option<Table<'a>>, Problem> {
        match self.field(slot, 4)? {
            Some(pos) => Table::at(self.buf, follow(self.buf, pos, name)?, name).map(Some),
            None => Ok(None),
        }
    }

    /// A vector field whose elements are `element_size` bytes (4 for tables and strings).
    pub(super) fn vector(
        &self,
        slot: usize,
        element_size: usize,
        name: &'static str,
    ) -> Result<Option<Vector<'a>>, Problem> {
        let Some(pos) = self.field(slot, 4)? else {
            return Ok(None);
        };
        let start = follow(self.buf, pos, name)?;
        let len = read_u32(self.buf, start, name)? as usize;
        let bytes = len
            .checked_mul(element_size)
            .and_then(|n| n.checked_add(start + 4))
            .filter(|&end| end <= self.buf.len());
        if bytes.is_none() {
            return Err(format!(
                "{name}: {len} elements of {element_size} bytes overrun the flatbuffer"
            ));
        }
        Ok(Some(Vector {
            buf: self.buf,
            first: start + 4,
            len,
            element_size,
            name,
        }))
    }

    /// A string field, checked to be UTF-8.
    pub(super) fn string(
        &self,
        slot: usize,
        name: &'static str,
    ) -> Result<Option<&'a str>, Problem> {
        match self.vector(slot, 1, name)? {
            Some(v) => {
                let bytes = self.buf.get(v.first..v.first + v.len).unwrap_or_default();
                std::str::from_utf8(bytes)
                    .map(Some)
                    .map_err(|_| format!("{name} is not UTF-8"))
            }
            None => Ok(None),
        }
    }
}

/// A vector inside a flatbuffer (bounds already checked).
pub(super) struct Vector<'a> {
    buf: &'a [u8],
    first: usize,
    len: usize,
    element_size: usize,
    name: &'static str,
}

impl<'a> Vector<'a> {
    /// Number of elements.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The bytes of inline struct element `i`.
    pub(super) fn struct_at(&self, i: usize) -> Result<&'a [u8], Problem> {
        let start = self.first + i * self.element_size;
        self.buf
            .get(start..start + self.element_size)
            .filter(|_| i < self.len)
            .ok_or_else(|| format!("{}: element {i} out of range", self.name))
    }

    /// Table element `i` of a vector of tables.
    pub(super) fn table_at(&self, i: usize, name: &'static str) -> Result<Table<'a>, Problem> {
        if i >= self.len {
            return Err(format!("{}: element {i} out of range", self.name));
        }
        Table::at(self.buf, follow(self.buf, self.first + 4 * i, name)?, name)
    }
}

/// A field value given to [`Builder::table`].
#[derive(Clone, Copy)]
pub(super) enum Field {
    /// A field left out (its vtable entry is 0).
    Absent,
    /// A `u8`, `bool` or union type tag.
    U8(u8),
    /// An `i16` (short or enum).
    I16(i16),
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// A reference to a table, vector or string written later; patched with [`Builder::patch`].
    Ref,
}

impl Field {
    fn size(self) -> usize {
        match self {
            Field::Absent => 0,
            Field::U8(_) => 1,
            Field::I16(_) => 2,
            Field::I32(_) | Field::Ref => 4,
            Field::I64(_) => 8,
        }
    }
}

/// Builds a flatbuffer front to back: the root offset first, then each table preceded by its
/// vtable, then (later) whatever the table refers to, so every `u32` offset points forward.
pub(super) struct Builder {
    buf: Vec<u8>,
}

impl Builder {
    /// An empty buffer with room for the root offset.
    pub(super) fn new() -> Builder {
        Builder { buf: vec![0; 4] }
    }

    fn pad_to(&mut self, align: usize) {
        while self.buf.len() % align != 0 {
            self.buf.push(0);
        }
    }

    /// Writes a table whose field `i` is `fields[i]`; returns its position and the positions
    /// of its [`Field::Ref`] slots, in field order.
    pub(super) fn table(&mut self, fields: &[Field]) -> (usize, Vec<usize>) {
        self.pad_to(2);
        let vtable = self.buf.len();
        let vtable_len = 4 + 2 * fields.len();
        self.buf.resize(vtable + vtable_len, 0);
        self.pad_to(8);
        let table = self.buf.len();
        // Place the largest fields first so that each is aligned to its size.
        let mut placed = vec![0usize; fields.len()];
        let mut end = table + 4;
        for size in [8, 4, 2, 1] {
            for (i, f) in fields.iter().enumerate().filter(|(_, f)| f.size() == size) {
                end = end.next_multiple_of(size);
                placed[i] = end;
                let bytes: Vec<u8> = match *f {
                    Field::Absent => continue,
                    Field::U8(v) => vec![v],
                    Field::I16(v) => v.to_le_bytes().to_vec(),
                    Field::I32(v) => v.to_le_bytes().to_vec(),
                    Field::I64(v) => v.to_le_bytes().to_vec(),
                    Field::Ref => vec![0; 4],
                };
                self.buf.resize(end, 0);
                self.buf.extend_from_slice(&bytes);
                end += size;
            }
        }
        self.buf.resize(end.next_multiple_of(4), 0);
        let table_len = self.buf.len() - table;
        self.buf[table..table + 4].copy_from_slice(&((table - vtable) as i32).to_le_bytes());
        self.buf[vtable..vtable + 2].copy_from_slice(&(vtable_len as u16).to_le_bytes());
        self.buf[vtable + 2..vtable + 4].copy_from_slice(&(table_len as u16).to_le_bytes());
        for (i, &at) in placed.iter().enumerate().filter(|&(_, &at)| at != 0) {
            let entry = vtable + 4 + 2 * i;
            self.buf[entry..entry + 2].copy_from_slice(&((at - table) as u16).to_le_bytes());
        }
        let refs = fields
            .iter()
            .zip(&placed)
            .filter(|(f, _)| matches!(f, Field::Ref))
            .map(|(_, &p)| p);
        (table, refs.collect())
    }

    /// Writes a vector of inline structs (`bytes` = the concatenated elements) aligned for
    /// `align`-byte members; returns its position.
    pub(super) fn struct_vector(&mut self, count: usize, bytes: &[u8], align: usize) -> usize {
        while (self.buf.len() + 4) % align != 0 {
            self.buf.push(0);
        }
        let at = self.buf.len();
        self.buf.extend_from_slice(&(count as u32).to_le_bytes());
        self.buf.extend_from_slice(bytes);
        at
    }

    /// Writes a vector of `count` references; returns its position and the slots to patch.
    pub(super) fn ref_vector(&mut self, count: usize) -> (usize, Vec<usize>) {
        self.pad_to(4);
        let at = self.buf.len();
        self.buf.extend_from_slice(&(count as u32).to_le_bytes());
        let slots = (0..count).map(|i| at + 4 + 4 * i).collect();
        self.buf.resize(at + 4 + 4 * count, 0);
        (at, slots)
    }

    /// Writes a NUL-terminated string; returns its position.
    pub(super) fn string(&mut self, s: &str) -> usize {
        self.pad_to(4);
        let at = self.buf.len();
        self.buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
        at
    }

    /// Points the reference slot at `slot` to `target` (which was written after it).
    pub(super) fn patch(&mut self, slot: usize, target: usize) {
        let distance = (target - slot) as u32;
        self.buf[slot..slot + 4].copy_from_slice(&distance.to_le_bytes());
    }

    /// Sets the root table and returns the buffer, padded to a multiple of 8 bytes.
    pub(super) fn finish(mut self, root: usize) -> Vec<u8> {
        self.patch(0, root);
        self.pad_to(8);
        self.buf
    }
}
