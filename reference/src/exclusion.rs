//! (module under construction: see issue 2)
