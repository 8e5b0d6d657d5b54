//! A Server-Sent Events decoder (the WHATWG event-stream format), fed with
//! bytes as they arrive. Lines end with `\n`, `\r\n` or `\r`, also when the
//! two bytes of `\r\n` land in different chunks; a UTF-8 sequence split
//! across chunks is reassembled; comments and unknown fields are skipped.
//!
//! Hand-written rather than a crate: the decoders on crates.io tie
//! themselves to an async runtime's byte streams, while the browser hands us
//! chunks from a `ReadableStream`. It is small and fuzzed (`fuzz/`).

/// Longest event accepted, in bytes: a bound on what a broken upstream can
/// make us buffer.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field ("message" when absent).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// The event stream is larger than [`MAX_EVENT_BYTES`] without a boundary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an event of the stream exceeds {MAX_EVENT_BYTES} bytes")]
pub struct EventTooLarge;

/// Incremental decoder state.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    data: String,
    event: String,
    has_data: bool,
    after_cr: bool,
    started: bool,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> SseDecoder {
        SseDecoder::default()
    }

    /// Feeds the next chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, EventTooLarge> {
        let mut events = Vec::new();
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line) {
                        events.push(event);
                    }
                }
                _ => {
                    self.line.push(byte);
                    if self.line.len() + self.data.len() > MAX_EVENT_BYTES {
                        return Err(EventTooLarge);
                    }
                }
            }
        }
        Ok(events)
    }

    /// Ends the stream: an unterminated last event is dispatched as the
    /// spec's "end of stream" would drop it; we keep it when it has data,
    /// because some servers omit the final blank line.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            if let Some(event) = self.line_done(&line) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn line_done(&mut self, mut line: &[u8]) -> Option<SseEvent> {
        // A byte-order mark can only open the stream, i.e. its first line
        // (checked here so a BOM split across chunks is still recognised).
        if !std::mem::replace(&mut self.started, true) {
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.find(':') {
            Some(i) => (&text[..i], text[i + 1..].strip_prefix(' ').unwrap_or(&text[i + 1..])),
            None => (&*text, ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() > MAX_EVENT_BYTES {
                    return None;
                }
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "event" => self.event = value.to_owned(),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        Some(SseEvent { event: if event.is_empty() { "message".into() } else { event }, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for piece in input.chunks(size.max(1)) {
            events.extend(decoder.feed(piece).unwrap());
        }
        events.extend(decoder.finish());
        events
    }

    #[test]
    fn same_events_whatever_the_chunking() {
        let input = "\u{FEFF}: comment\ndata: {\"a\":1}\n\nevent: ping\ndata: x\r\n\r\ndata: first\ndata:second\r\rdata: 日本語🦀\n\ndata: [DONE]\n\n";
        let want = vec![
            SseEvent { event: "message".into(), data: "{\"a\":1}".into() },
            SseEvent { event: "ping".into(), data: "x".into() },
            SseEvent { event: "message".into(), data: "first\nsecond".into() },
            SseEvent { event: "message".into(), data: "日本語🦀".into() },
            SseEvent { event: "message".into(), data: "[DONE]".into() },
        ];
        for size in 1..=input.len() {
            assert_eq!(decode_in_pieces(input.as_bytes(), size), want, "chunk size {size}");
        }
    }

    #[test]
    fn a_last_event_without_blank_line_is_kept() {
        assert_eq!(decode_in_pieces(b"data: tail", 3), vec![SseEvent { event: "message".into(), data: "tail".into() }]);
        assert!(decode_in_pieces(b"event: lone\n\n", 3).is_empty(), "no data, no event");
    }
}
