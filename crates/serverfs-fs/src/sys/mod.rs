//! Operating-system specific resolution. Only Linux is implemented; other
//! systems will add a sibling module behind the same functions.

pub(crate) mod linux;
