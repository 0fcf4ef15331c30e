//! Target `manifest`: bytes -> `decode_manifest_file` (framing, Manifest, IndexSection) ->
//! `decode_manifest` (paths, required fields, bitmaps, inline lineage, row limits).
//!
//! Properties: no panic and no unbounded allocation; the raw `Manifest` protobuf of any input
//! re-encodes to a fixed point; an accepted manifest file re-frames to messages equal to the
//! ones read; an accepted snapshot skeleton encodes (`encode_manifest` +
//! `encode_manifest_file`) to bytes that decode to an equal snapshot and layout and re-encode
//! byte-identically.
//!
//! Byte identity is checked from the first re-encoding, not against the input: the decoder
//! rightly accepts protobuf it does not write itself (fields in another order, unknown or
//! unmodelled fields such as `timestamp` and `tag`), so only the kit's own output is canonical.

use lance_reference::proto::lance::table as pb;
use lance_reference_io::codec::{decode_manifest, encode_manifest};
use lance_reference_io::manifest_file::{decode_manifest_file, encode_manifest_file};
use prost::Message;

const FILE: &str = "_versions/1.manifest";
/// The largest `physical_rows` the decoder is asked to accept (bounds inline lineage).
const MAX_FRAGMENT_ROWS: u64 = 1 << 16;

pub fn check(data: &[u8]) {
    // The Manifest message alone, for inputs that are a bare protobuf.
    if let Ok(manifest) = pb::Manifest::decode(data) {
        let bytes = manifest.encode_to_vec();
        let again = pb::Manifest::decode(bytes.as_slice()).expect("re-encoded manifest decodes");
        assert_eq!(again, manifest, "manifest changed through encode/decode");
        assert_eq!(
            again.encode_to_vec(),
            bytes,
            "manifest encoding is not a fixed point"
        );
    }

    let Ok(file) = decode_manifest_file(data, FILE) else {
        return;
    };
    let reframed = encode_manifest_file(&file.manifest, file.index_section.as_ref())
        .expect("an accepted manifest file re-frames");
    let back = decode_manifest_file(&reframed, FILE).expect("re-framed manifest file decodes");
    assert_eq!(
        back.index_section, file.index_section,
        "IndexSection changed by re-framing"
    );
    let mut expected = file.manifest.clone();
    expected.index_section = file.index_section.as_ref().map(|_| 0);
    expected.transaction_section = None;
    expected.transaction_section_deprecated = None;
    assert_eq!(back.manifest, expected, "Manifest changed by re-framing");

    let Ok((snapshot, layout)) = decode_manifest(&file, FILE, MAX_FRAGMENT_ROWS) else {
        return;
    };
    let (manifest, section) =
        encode_manifest(&snapshot, &layout).expect("an accepted snapshot skeleton encodes");
    let bytes = encode_manifest_file(&manifest, section.as_ref()).expect("encoded manifest frames");
    let file2 = decode_manifest_file(&bytes, FILE).expect("written manifest file decodes");
    let (snapshot2, layout2) =
        decode_manifest(&file2, FILE, MAX_FRAGMENT_ROWS).expect("written manifest decodes");
    assert_eq!(snapshot2, snapshot, "snapshot changed through the manifest");
    // writer_version, data_format and timestamp are written as the kit writes them, whatever
    // was read (codec module docs); everything else in the layout must survive, except
    // that a missing max_fragment_id is filled in.
    let mut expected_layout = layout.clone();
    expected_layout.writer_version = layout2.writer_version.clone();
    expected_layout.data_format = layout2.data_format.clone();
    expected_layout.timestamp = layout2.timestamp;
    // max_fragment_id is written even when absent, and never below a present fragment id.
    let largest = snapshot.fragments.iter().map(|f| f.id as u32).max();
    expected_layout.max_fragment_id = layout.max_fragment_id.max(largest);
    assert_eq!(
        layout2, expected_layout,
        "layout changed through the manifest"
    );
    let (manifest3, section3) = encode_manifest(&snapshot2, &layout2).expect("re-encodes");
    let bytes3 = encode_manifest_file(&manifest3, section3.as_ref()).expect("re-frames");
    assert_eq!(bytes3, bytes, "manifest bytes are not a fixed point");
}
