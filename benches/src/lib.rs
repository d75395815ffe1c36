//! toolstream-benches: criterion benches and the recorded-corpus generator (see issue: performance).
