//! toolstream-sinks: the [`Sink`] trait and the sinks that lay output events out.
