//! Records split across physical lines (SPEC §1.1 rule 12): some `cursor-agent` builds write string
//! values with literal newlines, so one record spans several lines. A line that did not decode on
//! its own, starts an object and is valid JSON up to its end but for a string still open there, is
//! joined with the lines after it (each newline kept as `\n` inside the string) until the object
//! closes: at most [`MAX_RECORD_LINES`] lines and the line-length bound in bytes. The joined record
//! is decoded like a line. Past a bound, at the end of input, or when the joined text still does
//! not decode, every physical line is handled exactly as it would have been on its own: the first
//! reported with its own error, the others decoded one by one.
//!
//! Cheap and linear: only a line that failed to decode is looked at; the JSON syntax of the record
//! being joined is tracked incrementally ([`Scan`]), so each added line is scanned once and the
//! record is decoded once, when it closes. A line that is a string continuation (it keeps the
//! string open) can never start a record itself (it would need an odd number of quotes and an even
//! one), so a failed attempt hands its lines back to be decoded one by one and at most its last line
//! starts a new attempt: no line is scanned more than twice.
//!
//! Pure (no I/O): [`Rejoiner`] is driven by the caller's [`Lines`], and [`records`] runs it over a
//! byte slice with JSON validity as the decoder (the fuzz target).

use super::{Frame, LineReader};

/// Most physical lines one record may span (SPEC §1.1 rule 12).
pub const MAX_RECORD_LINES: usize = 10_000;

/// The line-by-line decoder the rejoiner drives.
pub trait Lines {
    /// A line's decode error, kept until the rejoiner knows what became of the line.
    type Error;
    /// Decode one physical line (or take note of a line that was too long) on its own.
    fn decode(&mut self, frame: Frame<'_>) -> Result<(), Self::Error>;
    /// Decode a record joined from `lines` physical lines, the first at `line_no` / `offset`.
    fn decode_joined(&mut self, record: Joined<'_>) -> Result<(), Self::Error>;
    /// A line that did not decode, with the error `decode` gave for it.
    fn bad(&mut self, error: Self::Error);
}

/// A record joined from several physical lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Joined<'a> {
    /// Line number and byte offset of its first line.
    pub line_no: u64,
    pub offset: u64,
    /// How many physical lines it spans (at least 2).
    pub lines: usize,
    /// The record, each newline inside its strings written as `\n`.
    pub text: &'a [u8],
}

impl Joined<'_> {
    /// The record as a frame of its first line.
    pub fn frame(&self) -> Frame<'_> {
        Frame::Line { line_no: self.line_no, offset: self.offset, bytes: self.text }
    }
}

/// Joins records split across lines; see the module docs.
pub struct Rejoiner<E> {
    max_bytes: usize,
    pending: Option<Pending<E>>,
}

impl<E> std::fmt::Debug for Rejoiner<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lines = self.pending.as_ref().map_or(0, |p| p.lines.len());
        f.debug_struct("Rejoiner").field("max_bytes", &self.max_bytes).field("pending_lines", &lines).finish()
    }
}

/// A record being joined.
struct Pending<E> {
    /// The first line's error, reported if the record never comes together.
    error: E,
    /// The record so far.
    text: Vec<u8>,
    /// Each physical line: number, offset and where its bytes are in `text`.
    lines: Vec<Held>,
    scan: Scan,
}

#[derive(Clone, Copy)]
struct Held {
    line_no: u64,
    offset: u64,
    start: usize,
    end: usize,
}

/// A record that did not come together, being handed back line by line.
struct GivenBack<E> {
    /// The first line's error, until reported.
    error: Option<E>,
    text: Vec<u8>,
    lines: Vec<Held>,
    /// The next line to hand back (the first is reported, never handed back).
    next: usize,
    /// A too-long line that ended the attempt: it follows the others.
    then: Option<Frame<'static>>,
}

/// What the record being joined does with its next line.
enum Next {
    /// Still in a string: keep joining.
    Held,
    /// The object closed: decode it.
    Closed,
    /// It cannot be this record (bad syntax, a bound): give its lines back.
    GiveUp,
}

impl<E> Rejoiner<E> {
    /// `max_bytes`: the longest record (the framing's line bound).
    pub fn new(max_bytes: usize) -> Self {
        Rejoiner { max_bytes, pending: None }
    }

    /// Whether a record is being joined (lines are held back).
    pub fn is_joining(&self) -> bool {
        self.pending.is_some()
    }

    /// Hand over the next physical line.
    #[inline]
    pub fn push<L: Lines<Error = E>>(&mut self, frame: Frame<'_>, out: &mut L) {
        if self.pending.is_none() {
            // The common path: a line on its own, decoded as if there were no rejoiner.
            self.fresh(frame, out);
        } else if let Some(failed) = self.step(frame, out) {
            self.hand_back(failed, out);
        }
    }

    /// End of input: a record still open is handed back line by line.
    pub fn finish<L: Lines<Error = E>>(&mut self, out: &mut L) {
        while let Some(p) = self.pending.take() {
            self.hand_back(p.give_back(None), out);
        }
    }

    /// One line: decoded on its own, or added to the record being joined. A record that did not
    /// come together is returned.
    fn step<L: Lines<Error = E>>(&mut self, frame: Frame<'_>, out: &mut L) -> Option<GivenBack<E>> {
        let Some(mut p) = self.pending.take() else {
            self.fresh(frame, out);
            return None;
        };
        let (line_no, offset, bytes) = match frame {
            Frame::Line { line_no, offset, bytes } => (line_no, offset, bytes),
            Frame::TooLong { line_no, offset, len } => {
                return Some(p.give_back(Some(Frame::TooLong { line_no, offset, len })));
            }
        };
        match p.add(line_no, offset, bytes, self.max_bytes) {
            Next::Held => {
                self.pending = Some(p);
                None
            }
            Next::Closed => {
                let first = p.lines.first().copied()?;
                let record =
                    Joined { line_no: first.line_no, offset: first.offset, lines: p.lines.len(), text: &p.text };
                out.decode_joined(record).err().map(|_| p.give_back(None))
            }
            Next::GiveUp => Some(p.give_back(None)),
        }
    }

    /// A line not part of a record: decode it; hold it if it fails and may start one.
    #[inline]
    fn fresh<L: Lines<Error = E>>(&mut self, frame: Frame<'_>, out: &mut L) {
        if let Err(error) = out.decode(frame) {
            self.failed(frame, error, out);
        }
    }

    /// A line that did not decode on its own: held if it may start a record, else reported.
    #[cold]
    fn failed<L: Lines<Error = E>>(&mut self, frame: Frame<'_>, error: E, out: &mut L) {
        let Frame::Line { line_no, offset, bytes } = frame else {
            out.bad(error);
            return;
        };
        let mut scan = Scan::default();
        if scan.feed(bytes) != Status::InString {
            out.bad(error);
            return;
        }
        let lines = vec![Held { line_no, offset, start: 0, end: bytes.len() }];
        self.pending = Some(Pending { error, text: bytes.to_vec(), lines, scan });
    }

    /// Report the first line of a record that did not come together, and hand every other line
    /// over again as if no record had been started. Iterative: a line handed back may start a
    /// record of its own, which may fail in turn (only the last can: see the module docs).
    fn hand_back<L: Lines<Error = E>>(&mut self, failed: GivenBack<E>, out: &mut L) {
        tracing::trace!(lines = failed.lines.len(), "a split record did not come together: its lines go one by one");
        let mut work = vec![failed];
        while let Some(g) = work.last_mut() {
            if let Some(error) = g.error.take() {
                out.bad(error);
            }
            let frame = match g.lines.get(g.next) {
                Some(h) => {
                    g.next += 1;
                    Frame::Line { line_no: h.line_no, offset: h.offset, bytes: &g.text[h.start..h.end] }
                }
                None => match g.then.take() {
                    Some(f) => f,
                    None => {
                        work.pop();
                        continue;
                    }
                },
            };
            if let Some(again) = self.step(frame, out) {
                work.push(again);
            }
        }
    }
}

impl<E> Pending<E> {
    /// Add the next line (after a `\n` escape standing for the newline) and say what follows.
    fn add(&mut self, line_no: u64, offset: u64, bytes: &[u8], max_bytes: usize) -> Next {
        let too_big = self.text.len() + 2 + bytes.len() > max_bytes;
        self.text.extend_from_slice(b"\\n");
        let start = self.text.len();
        self.text.extend_from_slice(bytes);
        self.lines.push(Held { line_no, offset, start, end: self.text.len() });
        if too_big {
            return Next::GiveUp;
        }
        match self.scan.feed(bytes) {
            Status::InString if self.lines.len() < MAX_RECORD_LINES => Next::Held,
            Status::Complete => Next::Closed,
            Status::InString | Status::Invalid => Next::GiveUp,
        }
    }

    fn give_back(self, then: Option<Frame<'static>>) -> GivenBack<E> {
        GivenBack { error: Some(self.error), text: self.text, lines: self.lines, next: 1, then }
    }
}

/// One item of [`records`]' output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A line that is valid JSON on its own (blank lines included, as the decoders skip them).
    Line { line_no: u64, bytes: Vec<u8> },
    /// A record joined from `lines` lines starting at `line_no`.
    Joined { line_no: u64, lines: usize, text: Vec<u8> },
    /// A line that is not valid JSON on its own and not part of a joined record.
    Bad { line_no: u64 },
    /// A line longer than the bound.
    TooLong { line_no: u64 },
}

/// Split `input` into records as the engine does, with "is valid JSON" standing for "decodes"
/// (pure; the fuzz target of the rejoiner). Every physical line appears exactly once, in order:
/// on its own, or inside one joined record.
pub fn records(input: &[u8], max_line_bytes: usize) -> Vec<Record> {
    struct Collect(Vec<Record>);
    impl Lines for Collect {
        type Error = u64;
        fn decode(&mut self, frame: Frame<'_>) -> Result<(), u64> {
            match frame {
                Frame::TooLong { line_no, .. } => {
                    self.0.push(Record::TooLong { line_no });
                    Ok(())
                }
                Frame::Line { line_no, bytes, .. } if is_json_or_blank(bytes) => {
                    self.0.push(Record::Line { line_no, bytes: bytes.to_vec() });
                    Ok(())
                }
                Frame::Line { line_no, .. } => Err(line_no),
            }
        }
        fn decode_joined(&mut self, r: Joined<'_>) -> Result<(), u64> {
            if !is_json_or_blank(r.text) {
                return Err(r.line_no);
            }
            self.0.push(Record::Joined { line_no: r.line_no, lines: r.lines, text: r.text.to_vec() });
            Ok(())
        }
        fn bad(&mut self, line_no: u64) {
            self.0.push(Record::Bad { line_no });
        }
    }
    let mut reader = LineReader::with_max_line(input, max_line_bytes);
    let mut rejoiner = Rejoiner::new(max_line_bytes);
    let mut out = Collect(Vec::new());
    // Reading a byte slice cannot fail.
    while let Ok(Some(frame)) = reader.next_frame() {
        rejoiner.push(frame, &mut out);
    }
    rejoiner.finish(&mut out);
    out.0
}

/// Whether `bytes` would decode: blank, or JSON — UTF-8 as JSON text must be, which
/// `serde_json::from_slice` does not check inside the strings it skips (the decoders read text as
/// `str` and report invalid UTF-8).
fn is_json_or_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
        || std::str::from_utf8(bytes).is_ok_and(|s| serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok())
}

/// Where a scanned line left the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Inside a string (not in the middle of an escape): the next line may continue it.
    InString,
    /// The object closed, nothing but whitespace after it.
    Complete,
    /// Anything else: bad syntax, or open outside a string.
    Invalid,
}

/// Incremental JSON syntax of one object: strict about structure and strings (a backslash outside
/// a string, a control character inside one, a value where a `,` is due are errors), loose about
/// numbers and literals (their characters only; the decoder checks them when the record closes).
#[derive(Debug, Default)]
struct Scan {
    state: State,
    /// The open containers, innermost last: `true` for an object.
    stack: Vec<bool>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Nothing but whitespace yet; the record must be an object.
    #[default]
    Start,
    /// A key is due (`first`: right after `{`, so `}` may close it).
    Key {
        first: bool,
    },
    /// After a key: `:` is due.
    Colon,
    /// A value is due (`first`: right after `[`, so `]` may close it).
    Value {
        first: bool,
    },
    /// Inside a number or literal.
    Scalar,
    /// After a value: `,` or the container's closer is due.
    After,
    /// Inside a string; `key` when it is an object key.
    Str {
        key: bool,
    },
    /// After a backslash in a string.
    Escape {
        key: bool,
    },
    /// In a `\uXXXX` escape, `left` hex digits to go.
    Hex {
        key: bool,
        left: u8,
    },
    /// The object closed.
    Done,
    Error,
}

impl Scan {
    /// Scan the next line of the record; where it leaves the record.
    fn feed(&mut self, bytes: &[u8]) -> Status {
        let mut i = 0;
        while i < bytes.len() && self.state != State::Error {
            if let State::Str { key } = self.state {
                // The bulk of a long record: jump to the next quote or backslash.
                let rest = &bytes[i..];
                let Some(j) = memchr::memchr2(b'"', b'\\', rest) else {
                    if rest.iter().any(|&b| b < 0x20) {
                        self.state = State::Error;
                    }
                    break;
                };
                if rest[..j].iter().any(|&b| b < 0x20) {
                    self.state = State::Error;
                    break;
                }
                self.state = if rest[j] == b'\\' { State::Escape { key } } else { self.close_string(key) };
                i += j + 1;
                continue;
            }
            self.step(bytes[i]);
            i += 1;
        }
        match self.state {
            State::Str { .. } => Status::InString,
            State::Done => Status::Complete,
            _ => Status::Invalid,
        }
    }

    fn close_string(&self, key: bool) -> State {
        if key {
            State::Colon
        } else {
            self.after_value()
        }
    }

    /// The state after a complete value.
    fn after_value(&self) -> State {
        if self.stack.is_empty() {
            State::Done
        } else {
            State::After
        }
    }

    /// One byte outside a string's bulk.
    fn step(&mut self, b: u8) {
        let ws = matches!(b, b' ' | b'\t' | b'\r' | b'\n');
        self.state = match self.state {
            State::Start | State::Done if ws => self.state,
            State::Start if b == b'{' => self.open(true),
            State::Key { .. } | State::Colon | State::Value { .. } | State::After if ws => self.state,
            State::Key { .. } if b == b'"' => State::Str { key: true },
            State::Key { first: true } if b == b'}' => self.close(true),
            State::Colon if b == b':' => State::Value { first: false },
            State::Value { .. } => match b {
                b'"' => State::Str { key: false },
                b'{' => self.open(true),
                b'[' => self.open(false),
                b']' if self.state == (State::Value { first: true }) => self.close(false),
                _ if is_scalar(b) => State::Scalar,
                _ => State::Error,
            },
            State::Scalar if is_scalar(b) => State::Scalar,
            State::Scalar => {
                // The token ended: this byte belongs to what follows it.
                self.state = self.after_value();
                return self.step(b);
            }
            State::After => match (b, self.stack.last()) {
                (b',', Some(true)) => State::Key { first: false },
                (b',', Some(false)) => State::Value { first: false },
                (b'}', Some(true)) => self.close(true),
                (b']', Some(false)) => self.close(false),
                _ => State::Error,
            },
            State::Str { key } => match b {
                b'"' => self.close_string(key),
                b'\\' => State::Escape { key },
                0..=0x1f => State::Error,
                _ => State::Str { key },
            },
            State::Escape { key } => match b {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => State::Str { key },
                b'u' => State::Hex { key, left: 4 },
                _ => State::Error,
            },
            State::Hex { key, left } if b.is_ascii_hexdigit() => {
                if left == 1 {
                    State::Str { key }
                } else {
                    State::Hex { key, left: left - 1 }
                }
            }
            _ => State::Error,
        };
    }

    fn open(&mut self, object: bool) -> State {
        self.stack.push(object);
        if object {
            State::Key { first: true }
        } else {
            State::Value { first: true }
        }
    }

    fn close(&mut self, object: bool) -> State {
        match self.stack.pop() {
            Some(top) if top == object => self.after_value(),
            _ => State::Error,
        }
    }
}

/// A byte of a number or literal (`-1.5e+3`, `true`, `null`).
fn is_scalar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
}

#[cfg(test)]
mod tests;
