//! Writes interop *probe* datasets: the `plain` scenario (versions 1–3) with one manifest
//! edited so that it breaks (or tests) one rule of the spec. Each probe's name says what was
//! changed. `tests/interop/check_reference_datasets.py` then records what the reference
//! reader and pylance 14.0.2 do with each; the findings are in `INTEROP.md`.
//!
//! ```text
//! cargo run -p lance-reference --example write_probes -- <out dir>
//! ```

use lance_conformance_test_support::dataset_scenarios;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use dataset_scenarios::bitmap;
use lance_reference::model::{DataType, Field, Value};
use lance_reference::proto::lance::table::{self as pb, Manifest};
use lance_reference_io::data_file::{ColumnData, write_data_file};
use lance_reference_io::deletion::{DeletionFileType, write_deletion_file};
use lance_reference_io::manifest_file::{decode_manifest_file, encode_manifest_file};
use lance_reference_io::roaring_format::write_bitmap;
use lance_reference_io::version_names::{VERSIONS_DIR, manifest_name};
use lance_reference_io::{DatasetError, write_version};
use pb::data_overlay_file::Coverage;

type Edit = fn(&Path, &mut Manifest) -> Result<(), String>;

fn dense(bits: &[u32]) -> Option<Coverage> {
    Some(Coverage::SharedOffsetBitmap(write_bitmap(&bitmap(bits))))
}

fn probes() -> Vec<(&'static str, u64, Edit)> {
    vec![
        // [OVL-COV-3]: coverage {0,4,8} with physical_rows 8 (three values, as before).
        ("coverage_past_physical_rows", 2, |_, m| {
            m.fragments[0].overlays[0].coverage = dense(&[0, 4, 8]);
            Ok(())
        }),
        // [OVL-LAYOUT-4]: coverage {0,4} but three values.
        ("more_values_than_coverage", 2, |_, m| {
            m.fragments[0].overlays[0].coverage = dense(&[0, 4]);
            Ok(())
        }),
        // [OVL-VER-5]: committed_version newer than the manifest.
        ("committed_version_in_future", 2, |_, m| {
            m.fragments[0].overlays[0].committed_version = 9;
            Ok(())
        }),
        // [OVL-VER-5]: committed_version 0.
        ("committed_version_zero", 2, |_, m| {
            m.fragments[0].overlays[0].committed_version = 0;
            Ok(())
        }),
        // [OVL-FLAG-3]: overlays present, bit 64 clear in both words.
        ("overlays_without_flag_64", 2, |_, m| {
            m.reader_feature_flags &= !64;
            m.writer_feature_flags &= !64;
            Ok(())
        }),
        // [OVL-SHAPE-3]: a sparse overlay with one bitmap for two fields.
        ("field_coverage_count_mismatch", 2, |_, m| {
            if let Some(Coverage::FieldCoverage(fc)) = &mut m.fragments[1].overlays[0].coverage {
                fc.offset_bitmaps.truncate(1);
            }
            Ok(())
        }),
        // [OVL-LAYOUT-5]: one overlay lists field 1 twice (values 501 and 502 for offset 1).
        ("duplicate_field_in_overlay", 2, |root, m| {
            let f = Field::new(1, "val", DataType::Int32);
            let bytes = write_data_file(&[
                ColumnData::new(f.clone(), vec![Value::Int32(501)]),
                ColumnData::new(f, vec![Value::Int32(502)]),
            ])
            .map_err(|e| e.to_string())?;
            std::fs::write(root.join("data/dup.lance"), &bytes).map_err(|e| e.to_string())?;
            m.fragments[0].overlays.push(pb::DataOverlayFile {
                data_file: Some(pb::DataFile {
                    path: "dup.lance".into(),
                    fields: vec![1, 1],
                    column_indices: vec![0, 1],
                    file_major_version: 2,
                    file_minor_version: 0,
                    file_size_bytes: bytes.len() as u64,
                    base_id: None,
                }),
                coverage: dense(&[1]),
                committed_version: 2,
            });
            Ok(())
        }),
        // [OVL-DEL-3]: a deletion file naming offset 8 of an 8-row fragment.
        ("deletion_past_physical_rows", 2, |root, m| {
            let bytes = write_deletion_file(&bitmap(&[2, 8]), DeletionFileType::ArrowArray);
            std::fs::write(root.join("_deletions/0-0-77.arrow"), bytes)
                .map_err(|e| e.to_string())?;
            m.fragments[0].deletion_file = Some(pb::DeletionFile {
                file_type: 0,
                read_version: 0,
                id: 77,
                num_deleted_rows: 2,
                base_id: None,
            });
            Ok(())
        }),
        // [OVL-PREC-4]: fragment 0's overlays stored out of committed_version order (the v2
        // overlay moved last): readers must still let the v3 overlays win.
        ("overlays_stored_out_of_order", 3, |_, m| {
            let first = m.fragments[0].overlays.remove(0);
            m.fragments[0].overlays.push(first);
            Ok(())
        }),
    ]
}

fn edit(root: &Path, version: u64, f: Edit) -> Result<(), String> {
    let path = root.join(VERSIONS_DIR).join(manifest_name(version));
    let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
    let mf = decode_manifest_file(&bytes, "probe").map_err(|e: DatasetError| e.to_string())?;
    let mut manifest = mf.manifest;
    f(root, &mut manifest)?;
    let out =
        encode_manifest_file(&manifest, mf.index_section.as_ref()).map_err(|e| e.to_string())?;
    std::fs::write(&path, out).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let Some(out) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: write_probes <out dir>");
        return ExitCode::FAILURE;
    };
    let scenario = dataset_scenarios::plain();
    for (name, version, f) in probes() {
        let root = out.join(name);
        let written = scenario
            .versions
            .iter()
            .take_while(|v| v.version <= version)
            .try_for_each(|v| {
                write_version(&root, v, &scenario.options)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
            .and_then(|()| {
                std::fs::create_dir_all(root.join("_deletions")).map_err(|e| e.to_string())
            })
            .and_then(|()| edit(&root, version, f));
        if let Err(e) = written {
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
        println!("{} {version}", root.display());
    }
    ExitCode::SUCCESS
}
