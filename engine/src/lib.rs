//! toolstream engine library.
