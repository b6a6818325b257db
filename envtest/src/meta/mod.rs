//! `apimachinery`-level pieces every layer uses: `Status` errors, name validation, label
//! keys and values, and label and field selectors.

pub mod errors;
pub mod labels;
pub mod object_meta;
pub mod selectors;
pub mod validation;
