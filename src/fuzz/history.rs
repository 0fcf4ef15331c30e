//! Histories as seeds: the plain numbers a random history is made of, and drawing them
//! deterministically from a seed.
//!
//! Invariant: a seed holds no derived state; every selector in it is resolved against the
//! model's state when the history is concretized ([`super::builder`]), so any sub-list of
//! seeds (an op removed, a row dropped, a cell left out) is still a valid history. History `i`
//! of seed `S` ([`History::draw`]) is a pure function of `(S, i)`: no wall clock, no hash-map
//! order. This is the one generator of random histories: the model-based test draws its
//! histories here too (behind a proptest strategy) and shrinks them with [`super::shrink`].

/// The most operation seeds the model-based test draws in one history (a retry is one seed and
/// two versions).
pub const MAX_STEPS: usize = 40;

/// One byte per menu slot: a row's values (and, in slot 5, the struct's validity).
pub type RowSeed = [u8; 8];

#[derive(Debug, Clone)]
/// One overlay of an overlay commit.
pub struct OverlaySeed {
    /// Selects the target fragment.
    pub frag: u16,
    /// 0 dense, 1 sparse, 2 auto.
    pub shape: u8,
    /// (field selector, offset selector, value seed).
    pub cells: Vec<(u16, u16, u8)>,
    /// Bit `i` (of the low 7) kills the overlay's `i`-th field (in name order): a tombstone, or
    /// with the high bit a reserved id.
    pub tombstone: u8,
    /// Store the value columns in reverse name order.
    pub reverse: bool,
}

/// A table config change; the default leaves the config as it is.
#[derive(Debug, Clone, Default)]
pub struct ConfigSeed {
    /// 0 leave, 1 `true`, 2 `TRUE`, 3 `false`, 4 unset.
    pub spill: u8,
    /// 0 leave, 1 unset, otherwise a budget from [`BUDGETS`].
    pub budget: u8,
    /// 0 leave, 1 set, 2 unset the unrelated key.
    pub note: u8,
}

/// The lineage inline budgets a config seed picks from.
pub const BUDGETS: [&str; 6] = ["0", "1", "4", "8", "16", "64"];

#[derive(Debug, Clone)]
/// One operation: zero or one step once concretized (a retry is one step of two versions).
pub enum OpSeed {
    /// Append a fragment of these rows.
    Append(Vec<RowSeed>),
    /// Commit these overlays together.
    Overlay(Vec<OverlaySeed>),
    /// Delete offsets of one fragment.
    Delete {
        /// Selects the fragment.
        frag: u16,
        /// Select the offsets.
        offsets: Vec<u16>,
    },
    /// Delete by a predicate.
    DeleteWhere {
        /// Selects the field.
        field: u16,
        /// Draws the predicate.
        pred: u64,
    },
    /// Build an index (from an older version when `back` > 0: a racing build).
    BuildIndex {
        /// Selects the field.
        field: u16,
        /// A vector index (else a BTree).
        vector: bool,
        /// How many versions back the build reads.
        back: u16,
    },
    /// Merge a run of overlays contiguous in precedence.
    Merge {
        /// Selects the fragment (one with two or more overlays).
        frag: u16,
        /// Selects the first overlay of the run.
        start: u16,
        /// Selects the run's length.
        len: u16,
    },
    /// Fold a fragment's overlays into its base files.
    Fold {
        /// Selects the fragment (one with overlays).
        frag: u16,
        /// Bit `i`: rebuild index `i` (else drop it).
        policies: u32,
    },
    /// Rewrite adjacent fragments' rows into one.
    Rewrite {
        /// Selects the first fragment.
        frag: u16,
        /// Selects how many (1 to 3).
        len: u16,
    },
    /// A write that loses a commit race and is retried.
    Retry {
        /// The retried write (an append or overlays).
        write: Box<OpSeed>,
        /// What commits first.
        conflict: Box<OpSeed>,
    },
    /// Change the table config.
    Config(ConfigSeed),
    /// Add a menu field the schema lacks (again, if it was dropped).
    AddField(u16),
    /// Drop a top-level field other than `id`.
    DropField(u16),
}

#[derive(Debug, Clone)]
/// A history: a schema, a config, initial rows and indices, and operations.
pub struct History {
    /// Which optional fields the schema has (see [`super::model::FieldDef::group`]).
    pub schema: u8,
    /// Stable row ids on.
    pub stable: bool,
    /// The initial config.
    pub config: ConfigSeed,
    /// The rows of the `create` commit.
    pub rows: Vec<RowSeed>,
    /// (field selector, vector) per index built in the `create` commit.
    pub indices: Vec<(u16, bool)>,
    /// The operations after `create`.
    pub ops: Vec<OpSeed>,
    /// Drives the query predicates and vectors.
    pub query_seed: u64,
}

/// splitmix64: one step of the generator's random stream (also the query predicates' and
/// vectors' stream, from a history's query seed).
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A deterministic random stream (splitmix64).
#[derive(Debug, Clone)]
pub struct Stream(u64);

impl Stream {
    /// The stream of history `index` under `seed`.
    pub fn new(seed: u64, index: u64) -> Stream {
        Stream(mix(seed ^ mix(index.wrapping_add(0x5eed))))
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// A number in `lo..hi` (`lo` when the range is empty).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.bits() % (hi - lo)
        }
    }

    fn u8(&mut self) -> u8 {
        self.bits() as u8
    }

    fn u16(&mut self) -> u16 {
        self.bits() as u16
    }

    fn bool(&mut self) -> bool {
        self.bits() & 1 == 1
    }

    fn row(&mut self) -> RowSeed {
        self.bits().to_le_bytes()
    }

    fn config(&mut self) -> ConfigSeed {
        ConfigSeed {
            spill: self.range(0, 5) as u8,
            budget: self.range(0, 8) as u8,
            note: self.range(0, 3) as u8,
        }
    }

    fn overlay(&mut self) -> OverlaySeed {
        let frag = self.u16();
        let shape = self.range(0, 3) as u8;
        let n = self.range(1, 6);
        let cells = (0..n)
            .map(|_| (self.u16(), self.u16(), self.u8()))
            .collect();
        let tombstone = if self.range(0, 4) == 0 { self.u8() } else { 0 };
        OverlaySeed {
            frag,
            shape,
            cells,
            tombstone,
            reverse: self.bool(),
        }
    }

    fn append(&mut self) -> OpSeed {
        let n = self.range(1, 5);
        OpSeed::Append((0..n).map(|_| self.row()).collect())
    }

    fn overlays(&mut self) -> OpSeed {
        let n = self.range(1, 4);
        OpSeed::Overlay((0..n).map(|_| self.overlay()).collect())
    }

    fn delete(&mut self) -> OpSeed {
        let frag = self.u16();
        let n = self.range(1, 4);
        OpSeed::Delete {
            frag,
            offsets: (0..n).map(|_| self.u16()).collect(),
        }
    }

    fn build_index(&mut self) -> OpSeed {
        OpSeed::BuildIndex {
            field: self.u16(),
            vector: self.bool(),
            back: self.range(0, 4) as u16,
        }
    }

    /// One operation seed.
    fn op(&mut self) -> OpSeed {
        match self.range(0, 25) {
            0..3 => self.append(),
            3..9 => self.overlays(),
            9..11 => self.delete(),
            11 => OpSeed::DeleteWhere {
                field: self.u16(),
                pred: self.bits(),
            },
            12..14 => self.build_index(),
            14..16 => OpSeed::Merge {
                frag: self.u16(),
                start: self.u16(),
                len: self.u16(),
            },
            16..18 => OpSeed::Fold {
                frag: self.u16(),
                policies: self.bits() as u32,
            },
            18..20 => OpSeed::Rewrite {
                frag: self.u16(),
                len: self.u16(),
            },
            20..22 => {
                let write = if self.bool() {
                    self.append()
                } else {
                    self.overlays()
                };
                let conflict = match self.range(0, 5) {
                    0 => self.append(),
                    1 => self.overlays(),
                    2 => self.delete(),
                    3 => self.build_index(),
                    _ => OpSeed::Config(self.config()),
                };
                OpSeed::Retry {
                    write: Box::new(write),
                    conflict: Box::new(conflict),
                }
            }
            22 => OpSeed::Config(self.config()),
            23 => OpSeed::AddField(self.u16()),
            _ => OpSeed::DropField(self.u16()),
        }
    }
}

impl History {
    /// History `index` of `seed`, with up to `max_ops` operation seeds.
    pub fn draw(seed: u64, index: u64, max_ops: usize) -> History {
        let mut s = Stream::new(seed, index);
        let schema = s.u8();
        let stable = s.bool();
        let config = s.config();
        let rows = (0..s.range(0, 6)).map(|_| s.row()).collect();
        let indices = (0..s.range(0, 3)).map(|_| (s.u16(), s.bool())).collect();
        let ops = (0..s.range(0, max_ops as u64 + 1))
            .map(|_| s.op())
            .collect();
        History {
            schema,
            stable,
            config,
            rows,
            indices,
            ops,
            query_seed: s.bits(),
        }
    }
}
