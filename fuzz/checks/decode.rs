//! The decoder check: the fuzz targets `decode_cli`, `decode_sdk` and `decode_exec` run it on
//! every input, and `engine/tests/suite/fuzz_regressions.rs` on every input one of them once failed on.
//! Whatever the bytes and however they arrive, framing and decoding end without a panic, every
//! line is framed once and in order, a decode error names the line it is about, and every byte is
//! accounted for.

use std::io::Read;

use toolstream_engine::decode::framing::{Frame, LineReader};
use toolstream_engine::decode::{Decoder, Format};

/// A reader that hands out at most `size` bytes per read (a pipe, a slow producer).
struct Chunks<'a> {
    data: &'a [u8],
    size: usize,
}

impl Read for Chunks<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.data.len().min(self.size).min(buf.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// The first byte picks the line bound and the read size; the rest is the stream.
pub fn check(data: &[u8], format: Format) {
    let (knob, input) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b), rest),
        None => (0, data),
    };
    let max_line = 16 + (knob & 0x0f) * 512;
    let size = 1 + (knob >> 4) * 997;
    let mut reader = LineReader::with_max_line(Chunks { data: input, size }, max_line);
    let mut decoder = Decoder::new("fuzz", Some(format));
    decoder.set_max_line(max_line);
    let mut events = Vec::new();
    let mut last_line = 0;
    while let Some(frame) = reader.next_frame().expect("reading a slice does not fail") {
        let line_no = match &frame {
            Frame::Line { line_no, .. } | Frame::TooLong { line_no, .. } => *line_no,
        };
        assert_eq!(line_no, last_line + 1, "lines are framed once, in order");
        last_line = line_no;
        if let Err(e) = decoder.decode_frame(frame, &mut events) {
            assert_eq!(e.line_no, line_no, "{e}");
        }
    }
    assert_eq!(reader.position(), input.len() as u64, "every byte is accounted for");
}
