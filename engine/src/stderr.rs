//! What the user reads on stderr (SPEC §8): every message is one display line, so a file name, a
//! sink spec, a decode error or a model's text quoted in it can put no escape sequence, control
//! character or bidi control on the terminal, and a multi-line text cannot fake further messages.
//! [`say!`](crate::say) is `eprintln!` for these lines; [`log_fields`] does the same for the
//! `tracing` logs.
//!
//! A message is cut at [`MESSAGE_CHARS`], not at the 240 chars of a display line: our own messages
//! quote up to two paths and end with what to do (`… Close Cursor and pass
//! --i-know-cursor-is-closed`), and a cut at 240 would take the advice away.

use std::fmt;
use std::io::Write;

use toolstream_schemas::display::{display_line, DISPLAY_LINE_CHARS};
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::format::{debug_fn, Writer};
use tracing_subscriber::fmt::FormatFields;

/// Longest message on stderr, in chars (a display line's bound, four times over).
pub const MESSAGE_CHARS: usize = 4 * DISPLAY_LINE_CHARS;

/// `eprintln!` for a message to the user: the formatted text is written as one display line.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::stderr::write_line(format_args!($($arg)*))
    };
}

/// Writes `message` to stderr as one display line. A stderr that cannot be written to is ignored:
/// there is nowhere left to say so.
pub fn write_line(message: fmt::Arguments<'_>) {
    let line = match message.as_str() {
        Some(s) => display_line(s, MESSAGE_CHARS),
        None => display_line(&message.to_string(), MESSAGE_CHARS),
    };
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// How log fields are written: the message as a display line, every other field as
/// `name=<display line>`, separated by spaces (each cut at [`MESSAGE_CHARS`]).
pub fn log_fields() -> impl for<'w> FormatFields<'w> + Send + Sync + 'static {
    debug_fn(|w: &mut Writer<'_>, field: &tracing::field::Field, value: &dyn fmt::Debug| {
        let text = display_line(&format!("{value:?}"), MESSAGE_CHARS);
        match field.name() {
            "message" => write!(w, "{text}"),
            name => write!(w, "{name}={text}"),
        }
    })
    .delimited(" ")
}
