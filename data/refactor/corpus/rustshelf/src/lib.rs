//! A bookshelf: books, loans and printed labels.
pub mod label;
pub mod shelf;
