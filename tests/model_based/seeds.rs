//! Seeds: the proptest strategies of the seed types of `lance_conformance::fuzz::history`
//! (plain numbers, resolved against the model's state when concretized, so any sub-list of
//! seeds is still a valid history), which proptest generates and shrinks.

use super::*;

// ---------------------------------------------------------------------------------------------
// Seeds: what proptest generates and shrinks.
// ---------------------------------------------------------------------------------------------

pub(crate) fn row_seed() -> impl Strategy<Value = RowSeed> {
    any::<[u8; 8]>()
}

pub(crate) fn config_seed() -> impl Strategy<Value = ConfigSeed> {
    (0u8..5, 0u8..8, 0u8..3).prop_map(|(spill, budget, note)| ConfigSeed {
        spill,
        budget,
        note,
    })
}

pub(crate) fn overlay_seed() -> impl Strategy<Value = OverlaySeed> {
    (
        any::<u16>(),
        0u8..3,
        proptest::collection::vec((any::<u16>(), any::<u16>(), any::<u8>()), 1..6),
        prop_oneof![3 => Just(0u8), 1 => any::<u8>()],
        any::<bool>(),
    )
        .prop_map(|(frag, shape, cells, tombstone, reverse)| OverlaySeed {
            frag,
            shape,
            cells,
            tombstone,
            reverse,
        })
}

pub(crate) fn append_seed() -> impl Strategy<Value = OpSeed> {
    proptest::collection::vec(row_seed(), 1..5).prop_map(OpSeed::Append)
}

pub(crate) fn overlay_op_seed() -> impl Strategy<Value = OpSeed> {
    proptest::collection::vec(overlay_seed(), 1..4).prop_map(OpSeed::Overlay)
}

pub(crate) fn delete_seed() -> impl Strategy<Value = OpSeed> {
    (any::<u16>(), proptest::collection::vec(any::<u16>(), 1..4))
        .prop_map(|(frag, offsets)| OpSeed::Delete { frag, offsets })
}

pub(crate) fn build_index_seed() -> impl Strategy<Value = OpSeed> {
    (any::<u16>(), any::<bool>(), 0u16..4).prop_map(|(field, vector, back)| OpSeed::BuildIndex {
        field,
        vector,
        back,
    })
}

pub(crate) fn op_seed() -> impl Strategy<Value = OpSeed> {
    let retry = (
        prop_oneof![append_seed(), overlay_op_seed()],
        prop_oneof![
            append_seed(),
            overlay_op_seed(),
            delete_seed(),
            build_index_seed(),
            config_seed().prop_map(OpSeed::Config),
        ],
    )
        .prop_map(|(w, c)| OpSeed::Retry {
            write: Box::new(w),
            conflict: Box::new(c),
        });
    prop_oneof![
        3 => append_seed(),
        6 => overlay_op_seed(),
        2 => delete_seed(),
        1 => (any::<u16>(), any::<u64>()).prop_map(|(field, pred)| OpSeed::DeleteWhere { field, pred }),
        2 => build_index_seed(),
        2 => (any::<u16>(), any::<u16>(), any::<u16>())
            .prop_map(|(frag, start, len)| OpSeed::Merge { frag, start, len }),
        2 => (any::<u16>(), any::<u32>()).prop_map(|(frag, policies)| OpSeed::Fold { frag, policies }),
        2 => (any::<u16>(), any::<u16>()).prop_map(|(frag, len)| OpSeed::Rewrite { frag, len }),
        2 => retry,
        1 => config_seed().prop_map(OpSeed::Config),
        1 => any::<u16>().prop_map(OpSeed::AddField),
        1 => any::<u16>().prop_map(OpSeed::DropField),
    ]
}

pub(crate) fn history() -> impl Strategy<Value = History> {
    (
        any::<u8>(),
        any::<bool>(),
        config_seed(),
        proptest::collection::vec(row_seed(), 0..6),
        proptest::collection::vec((any::<u16>(), any::<bool>()), 0..3),
        proptest::collection::vec(op_seed(), 0..MAX_STEPS),
        any::<u64>(),
    )
        .prop_map(
            |(schema, stable, config, rows, indices, ops, query_seed)| History {
                schema,
                stable,
                config,
                rows,
                indices,
                ops,
                query_seed,
            },
        )
}
