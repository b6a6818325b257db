//! `apimachinery`-level pieces every layer uses: `Status` errors, name validation, label
//! keys and values, label and field selectors, and reading plain JSON.

pub mod errors;
pub mod json;
pub mod labels;
pub mod object_meta;
pub mod selectors;
pub mod validation;
