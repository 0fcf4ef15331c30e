//! Target `manifest`: bytes -> the `Manifest` protobuf.
//!
//! Properties: no panic and no unbounded allocation while decoding; an accepted message
//! re-encodes to bytes that decode to an equal message and re-encode byte-identically.
//!
//! The manifest framing and the protobuf -> snapshot conversion (`dataset` branch) replace
//! the raw decode here once they are merged.

use lance_reference::proto::lance::table as pb;
use prost::Message;

pub fn check(data: &[u8]) {
    let Ok(manifest) = pb::Manifest::decode(data) else {
        return;
    };
    let bytes = manifest.encode_to_vec();
    let again = pb::Manifest::decode(bytes.as_slice()).expect("re-encoded manifest decodes");
    assert_eq!(again, manifest, "manifest changed through encode/decode");
    assert_eq!(
        again.encode_to_vec(),
        bytes,
        "manifest encoding is not a fixed point"
    );
}
