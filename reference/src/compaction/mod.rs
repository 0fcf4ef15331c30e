//! (module under construction: see issue 2)

use crate::ErrorClass;

/// Errors of this module.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CompactionError {
    /// Placeholder until the module lands.
    #[error("not yet specified")]
    Unspecified,
}

impl CompactionError {
    /// The class of this failure.
    pub fn class(&self) -> ErrorClass {
        ErrorClass::Invalid
    }

    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        "unspecified"
    }
}
