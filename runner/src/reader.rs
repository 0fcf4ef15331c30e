//! Reading one version as a conforming reader must: refuse what it cannot trust, then scan.
//!
//! Invariant: rows are returned only after [`lance_reference::readable::check_readable`]
//! passed (the one check every read path makes), so a negative case's error is the first
//! check a reader must make, and its class is the one the reference assigns.

use lance_reference::model::Snapshot;
use lance_reference::readable::check_readable;
use lance_reference::scan::{ScanRow, scan};

/// Checks `snapshot` as a reader and scans every top-level column.
pub fn read(snapshot: &Snapshot) -> Result<Vec<ScanRow>, lance_reference::Error> {
    check_readable(snapshot)?;
    scan(snapshot, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lance_reference::ErrorClass;
    use lance_reference::worked_example;

    #[test]
    fn flags_are_checked_before_content() {
        // covers: FLG-READ-1
        let mut s = worked_example::version_1();
        assert_eq!(read(&s).unwrap().len(), 4);
        s.reader_flags |= 1 << 20;
        s.fragments[0].physical_rows = 99; // also invalid content: the flag check must win
        let e = read(&s).unwrap_err();
        assert_eq!(e.class(), ErrorClass::UnsupportedFeature);
    }
}
