//! Newline framing: chunk boundaries, the exact limit, CR, empty lines,
//! end of stream, and the memory bound.

use serverfs_protocol::bridge::{
    FrameDecoder, FrameTooLarge, MAX_FRAME_BYTES, Request, RequestEnvelope,
};

/// Every frame the decoder yields until it needs input (or fails).
fn drain(decoder: &mut FrameDecoder) -> Result<Vec<Vec<u8>>, FrameTooLarge> {
    let mut frames = Vec::new();
    while let Some(frame) = decoder.next_frame()? {
        frames.push(frame);
    }
    Ok(frames)
}

fn strings(frames: &[Vec<u8>]) -> Vec<&str> {
    frames
        .iter()
        .map(|f| std::str::from_utf8(f).unwrap())
        .collect()
}

#[test]
fn the_limit_is_one_mebibyte() {
    assert_eq!(MAX_FRAME_BYTES, 1_048_576);
    assert_eq!(FrameDecoder::new().limit(), MAX_FRAME_BYTES);
    assert_eq!(FrameDecoder::default().limit(), MAX_FRAME_BYTES);
}

#[test]
fn several_frames_in_one_chunk() {
    let mut decoder = FrameDecoder::new();
    decoder.push(b"{\"a\":1}\n{\"b\":2}\n{\"c\"");
    assert_eq!(
        strings(&drain(&mut decoder).unwrap()),
        ["{\"a\":1}", "{\"b\":2}"]
    );
    assert_eq!(decoder.buffered(), 4);
    decoder.push(b":3}\n");
    assert_eq!(strings(&drain(&mut decoder).unwrap()), ["{\"c\":3}"]);
    assert_eq!(decoder.buffered(), 0);
}

#[test]
fn frames_split_at_every_position_reassemble() {
    let stream = b"{\"a\":1}\n\n{\"bb\":[1,2]}\r\n{}\n";
    for split in 0..=stream.len() {
        for second in split..=stream.len() {
            let mut decoder = FrameDecoder::new();
            let mut frames = Vec::new();
            for chunk in [&stream[..split], &stream[split..second], &stream[second..]] {
                decoder.push(chunk);
                frames.extend(drain(&mut decoder).unwrap());
            }
            assert_eq!(
                strings(&frames),
                ["{\"a\":1}", "", "{\"bb\":[1,2]}\r", "{}"],
                "split at {split} and {second}"
            );
        }
    }
}

#[test]
fn byte_by_byte_feeding_yields_the_same_frames() {
    let stream = b"{\"x\":\"\xc3\xa9\"}\n{\"y\":2}\n";
    let mut decoder = FrameDecoder::new();
    let mut frames = Vec::new();
    for byte in stream {
        decoder.push(std::slice::from_ref(byte));
        frames.extend(drain(&mut decoder).unwrap());
    }
    assert_eq!(strings(&frames), ["{\"x\":\"é\"}", "{\"y\":2}"]);
}

#[test]
fn a_line_of_exactly_the_limit_including_its_newline_is_accepted() {
    let mut line = vec![b'a'; MAX_FRAME_BYTES - 1];
    line.push(b'\n');
    assert_eq!(line.len(), MAX_FRAME_BYTES);

    let mut decoder = FrameDecoder::new();
    decoder.push(&line);
    let frames = drain(&mut decoder).unwrap();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].len(), MAX_FRAME_BYTES - 1);
}

#[test]
fn a_line_one_byte_over_the_limit_is_refused() {
    let mut line = vec![b'a'; MAX_FRAME_BYTES];
    line.push(b'\n');
    assert_eq!(line.len(), MAX_FRAME_BYTES + 1);

    let mut decoder = FrameDecoder::new();
    decoder.push(&line);
    assert_eq!(
        decoder.next_frame(),
        Err(FrameTooLarge {
            limit: MAX_FRAME_BYTES
        })
    );
}

#[test]
fn the_exact_limit_holds_across_chunk_boundaries() {
    for chunk_size in [1 << 12, 1 << 16, MAX_FRAME_BYTES - 1, MAX_FRAME_BYTES] {
        for (content, accepted) in [(MAX_FRAME_BYTES - 1, true), (MAX_FRAME_BYTES, false)] {
            let mut stream = vec![b'a'; content];
            stream.extend_from_slice(b"\n{}\n");
            let mut decoder = FrameDecoder::new();
            let mut outcome = Ok(Vec::new());
            for chunk in stream.chunks(chunk_size) {
                decoder.push(chunk);
                match drain(&mut decoder) {
                    Ok(frames) => outcome.as_mut().unwrap().extend(frames),
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
            if accepted {
                let frames = outcome.unwrap();
                assert_eq!(frames.len(), 2, "chunks of {chunk_size}");
                assert_eq!(frames[0].len(), content);
                assert_eq!(frames[1], b"{}");
            } else {
                assert_eq!(
                    outcome,
                    Err(FrameTooLarge {
                        limit: MAX_FRAME_BYTES
                    }),
                    "chunks of {chunk_size}"
                );
            }
        }
    }
}

#[test]
fn an_unfinished_line_is_refused_as_soon_as_it_cannot_fit() {
    let mut decoder = FrameDecoder::with_limit(8);
    decoder.push(b"1234567");
    assert_eq!(
        decoder.next_frame(),
        Ok(None),
        "7 bytes + newline still fit"
    );
    decoder.push(b"8");
    assert_eq!(decoder.next_frame(), Err(FrameTooLarge { limit: 8 }));

    let mut decoder = FrameDecoder::new();
    decoder.push(&vec![b'a'; MAX_FRAME_BYTES - 1]);
    assert_eq!(decoder.next_frame(), Ok(None));
    decoder.push(b"a");
    assert_eq!(
        decoder.next_frame(),
        Err(FrameTooLarge {
            limit: MAX_FRAME_BYTES
        })
    );
}

#[test]
fn a_carriage_return_stays_in_the_frame_and_counts_toward_the_limit() {
    let mut decoder = FrameDecoder::with_limit(5);
    decoder.push(b"abc\r\n");
    assert_eq!(decoder.next_frame(), Ok(Some(b"abc\r".to_vec())));

    let mut decoder = FrameDecoder::with_limit(5);
    decoder.push(b"abcd\r\n");
    assert_eq!(decoder.next_frame(), Err(FrameTooLarge { limit: 5 }));
}

#[test]
fn a_crlf_request_decodes_like_an_lf_one() {
    let mut decoder = FrameDecoder::new();
    decoder.push(
        b"{\"protocol_version\":1,\"request_id\":\"r\",\"method\":\"task.get\",\"params\":{\"task_id\":\"t\"}}\r\n",
    );
    let frame = decoder.next_frame().unwrap().unwrap();
    assert_eq!(frame.last(), Some(&b'\r'));
    let request = Request::from_frame(&frame).unwrap();
    assert_eq!(request.request_id, "r");
}

#[test]
fn empty_lines_are_frames_that_the_envelope_refuses() {
    let mut decoder = FrameDecoder::new();
    decoder.push(b"\n\r\n\n");
    let frames = drain(&mut decoder).unwrap();
    assert_eq!(strings(&frames), ["", "\r", ""]);
    for frame in frames {
        let rejected = RequestEnvelope::parse(&frame).unwrap_err();
        assert_eq!(rejected.error.code().as_str(), "INVALID_REQUEST");
        assert_eq!(rejected.request_id, None);
    }
}

#[test]
fn frames_before_an_oversized_line_are_delivered_first() {
    let mut decoder = FrameDecoder::with_limit(8);
    decoder.push(b"{}\n{\"a\":1}\n123456789\n{}\n");
    assert_eq!(decoder.next_frame(), Ok(Some(b"{}".to_vec())));
    assert_eq!(decoder.next_frame(), Ok(Some(b"{\"a\":1}".to_vec())));
    assert_eq!(decoder.next_frame(), Err(FrameTooLarge { limit: 8 }));
}

#[test]
fn after_an_error_the_decoder_is_spent() {
    let mut decoder = FrameDecoder::with_limit(4);
    decoder.push(b"12345\n");
    assert!(decoder.next_frame().is_err());
    assert_eq!(decoder.buffered(), 0, "the buffer is released");
    decoder.push(b"{}\n");
    assert_eq!(decoder.buffered(), 0, "input after the error is ignored");
    assert_eq!(decoder.next_frame(), Err(FrameTooLarge { limit: 4 }));
    decoder.finish();
    assert_eq!(decoder.next_frame(), Err(FrameTooLarge { limit: 4 }));
}

#[test]
fn finish_returns_buffered_frames_then_the_unterminated_tail() {
    let mut decoder = FrameDecoder::new();
    decoder.push(b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}");
    decoder.finish();
    assert_eq!(
        strings(&drain(&mut decoder).unwrap()),
        ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
    );
    assert_eq!(decoder.next_frame(), Ok(None));
    decoder.push(b"{}\n");
    assert_eq!(
        decoder.next_frame(),
        Ok(None),
        "input after finish is ignored"
    );

    let mut empty = FrameDecoder::new();
    empty.push(b"{}\n");
    empty.finish();
    assert_eq!(strings(&drain(&mut empty).unwrap()), ["{}"]);
    assert_eq!(
        empty.next_frame(),
        Ok(None),
        "no phantom empty frame at the end"
    );
}

#[test]
fn the_buffer_never_exceeds_the_limit_plus_one_chunk() {
    let limit = 1000;
    let chunk = [b'x'; 64];
    let mut decoder = FrameDecoder::with_limit(limit);
    let mut pushed = 0;
    loop {
        decoder.push(&chunk);
        pushed += chunk.len();
        assert!(decoder.buffered() <= limit - 1 + chunk.len());
        match decoder.next_frame() {
            Ok(None) => assert!(decoder.buffered() < limit),
            Ok(Some(frame)) => panic!("unexpected frame of {} bytes", frame.len()),
            Err(error) => {
                assert_eq!(error, FrameTooLarge { limit });
                assert!(pushed >= limit);
                assert!(pushed < limit + chunk.len());
                break;
            }
        }
    }
}

#[test]
fn a_zero_limit_is_raised_to_one() {
    let mut decoder = FrameDecoder::with_limit(0);
    assert_eq!(decoder.limit(), 1);
    decoder.push(b"\n");
    assert_eq!(decoder.next_frame(), Ok(Some(Vec::new())));
    decoder.push(b"a");
    assert!(decoder.next_frame().is_err());
}

mod properties {
    use proptest::prelude::*;

    use serverfs_protocol::bridge::{FrameDecoder, RequestEnvelope};

    /// A stream of lines (some empty, some over a small limit) cut into
    /// chunks at arbitrary points.
    fn stream() -> impl Strategy<Value = (Vec<Vec<u8>>, Vec<usize>)> {
        let line = proptest::collection::vec(
            any::<u8>().prop_filter("no newline", |b| *b != b'\n'),
            0..40,
        );
        (
            proptest::collection::vec(line, 0..12),
            proptest::collection::vec(1usize..30, 1..20),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            // PROPTEST_CASES (the soak's long profile) raises it.
            cases: ProptestConfig::default().cases.max(512),
            ..ProptestConfig::default()
        })]

        /// However a stream is cut, the decoder yields exactly its lines
        /// up to the first one over the limit, then only errors, and never
        /// holds more than the limit plus the chunk just pushed.
        #[test]
        fn property_frames_survive_any_chunking((lines, cuts) in stream(), limit in 1usize..48) {
            let mut bytes = Vec::new();
            for line in &lines {
                bytes.extend_from_slice(line);
                bytes.push(b'\n');
            }
            let expected: Vec<&Vec<u8>> =
                lines.iter().take_while(|line| line.len() < limit).collect();
            let too_large = expected.len() < lines.len();
            let mut decoder = FrameDecoder::with_limit(limit);
            let (mut frames, mut failed, mut at, mut cut) = (Vec::new(), false, 0, 0);
            while at < bytes.len() && !failed {
                let size = cuts[cut % cuts.len()];
                cut += 1;
                let end = (at + size).min(bytes.len());
                decoder.push(&bytes[at..end]);
                prop_assert!(decoder.buffered() <= limit + size);
                at = end;
                loop {
                    match decoder.next_frame() {
                        Ok(Some(frame)) => frames.push(frame),
                        Ok(None) => break,
                        Err(_) => {
                            failed = true;
                            break;
                        }
                    }
                }
            }
            prop_assert_eq!(failed, too_large);
            prop_assert_eq!(frames.iter().collect::<Vec<_>>(), expected);
            if failed {
                prop_assert!(decoder.next_frame().is_err(), "a failed decoder stays failed");
            }
        }

        /// Any bytes as a request frame are parsed or refused, never a
        /// panic; a refusal carries a code.
        #[test]
        fn property_request_envelopes_never_panic(frame in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Err(rejected) = RequestEnvelope::parse(&frame) {
                let shown = format!("{rejected:?}");
                prop_assert!(!shown.is_empty());
            }
        }

        /// Envelopes of the real methods with arbitrary parameters: the
        /// second stage decodes or refuses them, never panics.
        #[test]
        fn property_request_params_never_panic(
            method in prop_oneof![
                prop::sample::select(&[
                    "task.submit", "task.get", "task.events", "task.cancel",
                    "approval.respond", "question.answer", "task.message.send",
                    "task.result.read", "runtime.list", "model.list",
                ][..]).prop_map(str::to_owned),
                "[a-z.]{1,16}",
            ],
            key in "[a-z_]{1,12}",
            value in prop_oneof![
                Just(serde_json::Value::Null),
                any::<i64>().prop_map(serde_json::Value::from),
                "\\PC{0,30}".prop_map(serde_json::Value::from),
                any::<bool>().prop_map(serde_json::Value::from),
            ],
        ) {
            let frame = serde_json::json!({
                "protocol_version": 1, "request_id": "r1", "method": method,
                "params": { key: value },
            });
            if let Ok(envelope) = RequestEnvelope::parse(frame.to_string().as_bytes()) {
                let _ = envelope.decode();
            }
        }
    }
}
