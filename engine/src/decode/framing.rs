//! NDJSON framing: splits a byte stream into lines with memchr, tracking 1-based line numbers and
//! byte offsets, stripping `\r` and a leading UTF-8 BOM, and bounding line length so a huge line
//! costs at most the bound in memory (the rest is skipped and reported, never buffered); and
//! rejoins a record that a writer split across lines ([`rejoin`], SPEC §1.1 rule 12).

pub mod rejoin;

use std::io::{self, Read};

/// Default upper bound on one line (16 MiB).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

const CHUNK: usize = 256 * 1024;

/// One framed line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete line (without its terminator). May be empty or whitespace.
    Line { line_no: u64, offset: u64, bytes: &'a [u8] },
    /// A line longer than the bound: its bytes were skipped.
    TooLong { line_no: u64, offset: u64, len: u64 },
}

/// Reads lines from any `Read`, reusing one buffer.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of unconsumed data in `buf`.
    start: usize,
    /// End of valid data in `buf`.
    end: usize,
    eof: bool,
    max_line: usize,
    line_no: u64,
    /// Stream offset of `buf[start]`.
    offset: u64,
    first: bool,
}

impl<R: Read> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_max_line(inner, DEFAULT_MAX_LINE_BYTES)
    }

    pub fn with_max_line(inner: R, max_line: usize) -> Self {
        LineReader {
            inner,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            eof: false,
            max_line: max_line.max(1),
            line_no: 0,
            offset: 0,
            first: true,
        }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.offset
    }

    /// Whether a complete next line is already buffered, so reading it will not block. Live
    /// input hands its events over when this turns false (before a read that may wait).
    pub fn has_buffered_line(&self) -> bool {
        memchr::memchr(b'\n', &self.buf[self.start..self.end]).is_some()
    }

    /// The next line, or `None` at end of input.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame<'_>>> {
        // Bytes after `start` already searched for a newline (positions move when `fill` compacts).
        let mut scanned = 0;
        loop {
            let from = self.start + scanned;
            if let Some(i) = memchr::memchr(b'\n', &self.buf[from..self.end]) {
                let nl = from + i;
                if nl - self.start > self.max_line {
                    return Ok(Some(self.take_too_long(nl)));
                }
                return Ok(Some(self.take_line(nl, nl + 1)));
            }
            scanned = self.end - self.start;
            if scanned > self.max_line {
                return self.skip_long_line().map(Some);
            }
            if self.eof {
                if scanned == 0 {
                    return Ok(None);
                }
                let end = self.end;
                return Ok(Some(self.take_line(end, end)));
            }
            self.fill()?;
        }
    }

    /// Consume an over-long line that is wholly in the buffer (its newline at `nl`).
    fn take_too_long(&mut self, nl: usize) -> Frame<'static> {
        self.line_no += 1;
        self.first = false;
        let offset = self.offset;
        let len = (nl - self.start) as u64;
        self.offset += len + 1;
        self.start = nl + 1;
        Frame::TooLong { line_no: self.line_no, offset, len }
    }

    /// Read more data, compacting or growing the buffer as needed.
    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 && (self.end == self.buf.len() || self.start > self.buf.len() / 2) {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grow = self.buf.len().min(self.max_line + 1);
            self.buf.resize(self.buf.len() + grow.max(CHUNK), 0);
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Consume `buf[start..content_end]` as a line; the next line starts at `next`.
    fn take_line(&mut self, content_end: usize, next: usize) -> Frame<'_> {
        self.line_no += 1;
        let offset = self.offset;
        let mut s = self.start;
        let mut e = content_end;
        if self.first {
            self.first = false;
            if self.buf[s..e].starts_with(b"\xEF\xBB\xBF") {
                s += 3;
            }
        }
        if e > s && self.buf[e - 1] == b'\r' {
            e -= 1;
        }
        self.offset += (next - self.start) as u64;
        self.start = next;
        Frame::Line { line_no: self.line_no, offset, bytes: &self.buf[s..e] }
    }

    /// Discard the rest of an over-long line without buffering it.
    fn skip_long_line(&mut self) -> io::Result<Frame<'static>> {
        self.line_no += 1;
        self.first = false;
        let offset = self.offset;
        let mut len = (self.end - self.start) as u64;
        self.start = 0;
        self.end = 0;
        loop {
            if self.eof {
                break;
            }
            self.fill()?;
            if let Some(i) = memchr::memchr(b'\n', &self.buf[..self.end]) {
                len += i as u64;
                self.start = i + 1;
                self.offset += len + 1;
                return Ok(Frame::TooLong { line_no: self.line_no, offset, len });
            }
            len += self.end as u64;
            self.end = 0;
        }
        self.offset += len;
        Ok(Frame::TooLong { line_no: self.line_no, offset, len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8], max: usize) -> Vec<(u64, u64, Result<Vec<u8>, u64>)> {
        let mut r = LineReader::with_max_line(input, max);
        let mut out = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            out.push(match f {
                Frame::Line { line_no, offset, bytes } => (line_no, offset, Ok(bytes.to_vec())),
                Frame::TooLong { line_no, offset, len } => (line_no, offset, Err(len)),
            });
        }
        out
    }

    #[test]
    fn splits_lines_with_offsets() {
        let f = frames(b"\xEF\xBB\xBFab\r\n\ncd", 100);
        assert_eq!(f, vec![(1, 0, Ok(b"ab".to_vec())), (2, 7, Ok(b"".to_vec())), (3, 8, Ok(b"cd".to_vec()))]);
    }

    #[test]
    fn knows_whether_the_next_line_is_buffered() {
        let mut r = LineReader::with_max_line(&b"a\nb\nc"[..], 100);
        assert!(!r.has_buffered_line(), "nothing read yet");
        r.next_frame().unwrap();
        assert!(r.has_buffered_line(), "b is complete in the buffer");
        r.next_frame().unwrap();
        assert!(!r.has_buffered_line(), "c has no newline yet");
    }

    #[test]
    fn empty_input_has_no_lines() {
        assert!(frames(b"", 10).is_empty());
    }

    #[test]
    fn long_lines_are_skipped_and_reported() {
        let mut input = vec![b'x'; 1000];
        input.extend_from_slice(b"\nok\n");
        input.extend(vec![b'y'; 50]);
        let f = frames(&input, 10);
        assert_eq!(f, vec![(1, 0, Err(1000)), (2, 1001, Ok(b"ok".to_vec())), (3, 1004, Err(50))]);
    }

    #[test]
    fn lines_spanning_many_chunks() {
        let line = vec![b'z'; CHUNK * 3 + 7];
        let mut input = line.clone();
        input.push(b'\n');
        input.extend_from_slice(b"tail");
        let f = frames(&input, DEFAULT_MAX_LINE_BYTES);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].2.as_ref().unwrap().len(), line.len());
        assert_eq!(f[1], (2, line.len() as u64 + 1, Ok(b"tail".to_vec())));
    }

    /// A reader that hands out one byte at a time.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }

    #[test]
    fn short_reads_are_fine() {
        let mut r = LineReader::with_max_line(Trickle(b"a\nbb\nccc"), 2);
        let mut got = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            got.push(match f {
                Frame::Line { bytes, .. } => String::from_utf8(bytes.to_vec()).unwrap(),
                Frame::TooLong { len, .. } => format!("<{len}>"),
            });
        }
        assert_eq!(got, vec!["a", "bb", "<3>"]);
    }
}
