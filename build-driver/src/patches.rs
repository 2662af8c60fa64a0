//! PLACEHOLDER (being implemented).
