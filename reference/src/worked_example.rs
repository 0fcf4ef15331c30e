//! The specification's six-step worked example, as data.
//!
//! Invariant: these values are exactly the example's: a `users` table with stable row ids,
//! fields `id`(1) `name`(2) `age`(3) `embedding`(4), one fragment of four rows written at
//! version 1, a BTree index on `age` built at version 1, and the two overlays of steps 1 and 4
//! as a writer stages them (committed_version 0 until a commit stamps it). The steps themselves
//! (commit, read, query, fold) are performed by the other modules; the integration test
//! `worked_example` walks all six, and `lance-conformance run` prints them.

use roaring::RoaringBitmap;

use crate::compaction::{FoldPlan, IndexPolicy, fold};
use crate::error::Result;
use crate::lineage::PendingCommit;
use crate::model::{
    Column, Coverage, DataFile, DataType, Field, Fragment, Index, IndexEntry, IndexKind, Lineage,
    LineageSequence, Overlay, Schema, Snapshot, Value,
};

/// Field id of `id`.
pub const ID: i32 = 1;
/// Field id of `name`.
pub const NAME: i32 = 2;
/// Field id of `age`.
pub const AGE: i32 = 3;
/// Field id of `embedding` (`fixed_size_list<float32, 3>`).
pub const EMBEDDING: i32 = 4;
/// Name of the BTree index on `age`.
pub const AGE_INDEX: &str = "age_idx";

const NAMES: [&str; 4] = ["Alice", "Bob", "Carol", "Dave"];
const AGES: [i32; 4] = [30, 25, 40, 22];
const EMBEDDINGS: [[f32; 3]; 4] = [
    [1.0, 0.0, 0.0],
    [0.0, 1.0, 0.0],
    [0.0, 0.0, 1.0],
    [1.0, 1.0, 0.0],
];

/// Bob's new embedding, written by step 4.
pub const NEW_BOB_EMBEDDING: [f32; 3] = [0.5, 0.5, 0.5];

fn vector(v: [f32; 3]) -> Value {
    Value::Vector(v.iter().map(|x| Some(*x)).collect())
}

/// The `users` schema.
pub fn schema() -> Schema {
    // The example's schema is fixed and valid; an error here would be a bug in this file.
    Schema::new(vec![
        Field::new(ID, "id", DataType::Int64),
        Field::new(NAME, "name", DataType::Utf8),
        Field::new(AGE, "age", DataType::Int32),
        Field::new(
            EMBEDDING,
            "embedding",
            DataType::FixedSizeList { dimension: 3 },
        ),
    ])
    .unwrap_or_default()
}

/// The column of `data_type` holding `values`. The example's literals fit their types; were
/// one not to, the column would be empty, which `Snapshot::validate` refuses.
fn column(data_type: DataType, values: Vec<Value>) -> Column {
    Column::of(&data_type, &values).unwrap_or_else(|_| Column::empty())
}

/// Version 1: fragment 0 with `data/file0.lance` holding all four columns, and the age index.
pub fn version_1() -> Snapshot {
    let columns = vec![
        column(DataType::Int64, (1..=4).map(Value::Int64).collect()),
        column(
            DataType::Utf8,
            NAMES
                .iter()
                .map(|n| Value::Utf8((*n).to_string()))
                .collect(),
        ),
        column(
            DataType::Int32,
            AGES.iter().map(|a| Value::Int32(*a)).collect(),
        ),
        column(
            DataType::FixedSizeList { dimension: 3 },
            EMBEDDINGS.iter().map(|e| vector(*e)).collect(),
        ),
    ];
    let mut fragment = Fragment::new(0, "file0.lance", vec![ID, NAME, AGE, EMBEDDING], columns);
    fragment.lineage = Lineage {
        row_ids: LineageSequence::Inline(vec![0, 1, 2, 3]),
        created_at: LineageSequence::Inline(vec![1; 4]),
        last_updated_at: LineageSequence::Inline(vec![1; 4]),
    };
    let index = Index {
        name: AGE_INDEX.to_string(),
        fields: vec![AGE],
        dataset_version: 1,
        fragment_bitmap: Some([0u32].into_iter().collect()),
        kind: IndexKind::BTree,
        entries: AGES
            .iter()
            .enumerate()
            .map(|(i, a)| IndexEntry {
                fragment: 0,
                offset: i as u32,
                value: Value::Int32(*a),
            })
            .collect(),
    };
    Snapshot {
        version: 1,
        schema: schema(),
        fragments: vec![fragment],
        indices: vec![index],
        config: Default::default(),
        stable_row_ids: true,
        next_row_id: 4,
        reader_flags: 2,
        writer_flags: 2,
    }
}

/// Step 1's dense overlay: `age` for offsets {1, 3} = [26, 23], not yet committed.
pub fn step_1_overlay() -> Overlay {
    Overlay {
        file: DataFile {
            path: "overlay-age.lance".to_string(),
            fields: vec![AGE],
            columns: vec![column(
                DataType::Int32,
                vec![Value::Int32(26), Value::Int32(23)],
            )],
        },
        coverage: Coverage::Dense([1u32, 3].into_iter().collect::<RoaringBitmap>()),
        committed_version: 0,
    }
}

/// Step 4's sparse overlay: `name` for {2, 3} and `embedding` for {1}, not yet committed.
pub fn step_4_overlay() -> Overlay {
    Overlay {
        file: DataFile {
            path: "overlay-name-embedding.lance".to_string(),
            fields: vec![NAME, EMBEDDING],
            columns: vec![
                column(
                    DataType::Utf8,
                    vec![Value::Utf8("Caroline".into()), Value::Utf8("David".into())],
                ),
                column(
                    DataType::FixedSizeList { dimension: 3 },
                    vec![vector(NEW_BOB_EMBEDDING)],
                ),
            ],
        },
        coverage: Coverage::Sparse(vec![
            [2u32, 3].into_iter().collect(),
            [1u32].into_iter().collect(),
        ]),
        committed_version: 0,
    }
}

/// The example's four versions, each produced by the reference's own operations:
///
/// 1. as written (fragment 0, the age index at dataset_version 1);
/// 2. step 1: the dense `age` overlay committed at version 2;
/// 3. step 4: the sparse `name` / `embedding` overlay committed at version 3;
/// 4. step 6: both overlays folded into `file1.lance` at version 4, the age index dropping
///    fragment 0 from its coverage in the same commit.
pub fn versions() -> Result<Vec<Snapshot>> {
    let v1 = version_1();
    let v2 = PendingCommit {
        overlays: vec![(0, vec![step_1_overlay()])],
        appended: vec![],
    }
    .apply(&v1, 2)?;
    let v3 = PendingCommit {
        overlays: vec![(0, vec![step_4_overlay()])],
        appended: vec![],
    }
    .apply(&v2, 3)?;
    let plan: FoldPlan = [(AGE_INDEX.to_string(), IndexPolicy::DropFragment)]
        .into_iter()
        .collect();
    let v4 = fold(&v3, 0, &plan, 4, "file1.lance")?;
    Ok(vec![v1, v2, v3, v4])
}
