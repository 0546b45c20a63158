//! LSP framing (`Content-Length` headers, bodies) from a hostile server: arbitrary bytes,
//! delivered in arbitrary chunks. Never a panic; a frame of ours always reads back whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prism_review::fuzz::{encode_frame, split_frames, FrameReader};

const MAX_BODY: usize = 64 * 1024;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the chunk size the stream arrives in.
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(first % 32) + 1;
    let mut reader = FrameReader::new(MAX_BODY);
    let mut streamed = Vec::new();
    'read: for piece in rest.chunks(chunk) {
        if reader.push(piece).is_err() {
            break;
        }
        loop {
            match reader.next_frame() {
                Ok(Some(body)) => streamed.push(body),
                Ok(None) => break,
                Err(_) => break 'read,
            }
        }
    }
    // The buffer-elsewhere splitter agrees with the incremental reader on whole input.
    if let Ok((ranges, used)) = split_frames(rest, MAX_BODY) {
        assert!(used <= rest.len());
        for r in &ranges {
            assert!(r.start <= r.end && r.end <= used);
        }
    }
    // Our own frame of any body reads back exactly.
    if rest.len() <= MAX_BODY {
        let mut r = FrameReader::new(MAX_BODY);
        r.push(&encode_frame(rest)).expect("our frame is accepted");
        assert_eq!(r.next_frame().expect("our frame parses").as_deref(), Some(rest));
        assert_eq!(r.buffered(), 0);
    }
});
