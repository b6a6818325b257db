//! `apimachinery`-level pieces every layer uses: `Status` errors, name validation, and
//! label and field selectors.

pub mod errors;
pub mod selectors;
pub mod validation;
