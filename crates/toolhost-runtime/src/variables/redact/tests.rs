use super::*;
use base64::Engine as _;
use serde_json::json;

const TOKEN: &str = "tok-9f8e7d6c5b4a";

fn redactor() -> Redactor {
    Redactor::new([("TOKEN".to_owned(), TOKEN.to_owned())])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn secrets_are_replaced_in_text_and_in_every_json_string() {
    let red = redactor();
    assert_eq!(
        red.text(&format!("auth {TOKEN} failed")),
        "auth [redacted TOKEN] failed"
    );
    assert_eq!(
        red.json(json!({"e": [format!("x {TOKEN}")], TOKEN: 1, "region": "eu"})),
        json!({"e": ["x [redacted TOKEN]"], "[redacted TOKEN]": 1, "region": "eu"})
    );
}

#[test]
fn every_common_encoding_is_redacted() {
    let red = redactor();
    let secret = TOKEN.as_bytes();
    let forms = [
        hex(secret),
        hex(secret).to_uppercase(),
        TOKEN.replace('-', "%2D"),
        TOKEN.replace('-', "%2d"),
        base64::engine::general_purpose::STANDARD.encode(secret),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
    ];
    for form in forms {
        let shown = red.text(&format!("value={form}; done"));
        assert!(shown.contains("[redacted TOKEN]"), "{form}: {shown}");
        assert!(!shown.contains(&form), "{form}: {shown}");
    }
}

#[test]
fn short_secrets_are_matched_only_in_clear_and_escaped() {
    let red = Redactor::new([("PIN".to_owned(), "4711".to_owned())]);
    assert_eq!(red.text("pin 4711"), "pin [redacted PIN]");
    assert_eq!(red.text("pin %34711"), "pin [redacted PIN]");
    // The hex and base64 forms of a 4-byte secret are too short to tell from chance.
    assert_eq!(red.text("hex 34373131"), "hex 34373131");
    assert_eq!(red.text("b64 NDcxMQ=="), "b64 NDcxMQ==");
    assert!(ENCODED_MIN_BYTES <= TOKEN.len());
}

#[test]
fn a_cut_end_never_keeps_the_beginning_of_a_secret() {
    let red = redactor();
    let cut_inside = format!("error: bad token {}", &TOKEN[..7]);
    assert_eq!(red.cut_text(&cut_inside), "error: bad token ");
    let whole = format!("error: {TOKEN} was refused.");
    assert_eq!(red.cut_text(&whole), "error: [redacted TOKEN] was refused.");
    // An end that could begin one of the secret's encodings is dropped too: at a cut edge a
    // character too many is lost rather than a piece of an encoded secret kept.
    let encoded_start = &base64::engine::general_purpose::STANDARD.encode(TOKEN)[..4];
    assert_eq!(red.cut_text(&format!("data: {encoded_start}")), "data: ");
}

#[test]
fn head_and_tail_redact_before_they_cut_and_keep_markers_whole() {
    let red = redactor();
    let text = format!("{}{TOKEN}{}", "a".repeat(10), "b".repeat(10));
    // Cut inside where the secret was: the marker is left out, never half of either.
    assert_eq!(red.head(&text, 15), format!("{}…", "a".repeat(10)));
    assert_eq!(red.tail(&text, 15), format!("…{}", "b".repeat(10)));
    assert_eq!(
        red.tail(&text, 26),
        format!("…[redacted TOKEN]{}", "b".repeat(10))
    );
}

#[test]
fn a_stream_holds_back_what_could_begin_a_secret() {
    let red = redactor();
    let mut stream = red.stream();
    let mut shown = String::new();
    for piece in [
        "the key is ",
        &TOKEN[..5],
        &TOKEN[5..11],
        &TOKEN[11..],
        " ok",
    ] {
        shown.push_str(&stream.push(piece));
        assert!(!shown.contains(&TOKEN[..5]), "{shown}");
    }
    shown.push_str(&stream.finish());
    assert_eq!(shown, "the key is [redacted TOKEN] ok");
    let mut stream = red.stream();
    let mut shown = stream.push("ends with tok");
    shown.push_str(&stream.finish());
    assert_eq!(shown, "ends with tok");
}

#[test]
fn binary_bytes_are_searched_in_every_form() {
    let red = redactor();
    let mut bytes = vec![0u8, 159, 146, 150];
    bytes.extend_from_slice(hex(TOKEN.as_bytes()).as_bytes());
    assert_eq!(red.found_in(&bytes), Some("TOKEN"));
    assert_eq!(red.found_in(&[0, 159, 146, 150]), None);
}

#[test]
fn what_is_left_of_a_base64_stream_carries_no_bit_of_the_secret() {
    let red = redactor();
    for lead in 0..6usize {
        let mut stream = vec![b'#'; lead];
        stream.extend_from_slice(TOKEN.as_bytes());
        stream.extend_from_slice(b" and then some more bytes");
        let (first_bit, end_bit) = (8 * lead, 8 * (lead + TOKEN.len()));
        for engine in [
            base64::engine::general_purpose::STANDARD,
            base64::engine::general_purpose::URL_SAFE,
        ] {
            let encoded = engine.encode(&stream);
            let shown = red.text(&encoded);
            let (left, right) = shown
                .split_once("[redacted TOKEN]")
                .unwrap_or_else(|| panic!("offset {lead}: {shown}"));
            // Character i of the stream carries bits 6i..6i+6: the characters kept on the left
            // end before the secret's first bit, those on the right begin after its last.
            assert!(encoded.starts_with(left) && encoded.ends_with(right));
            assert!(6 * left.len() <= first_bit, "offset {lead}: {shown}");
            assert!(
                6 * (encoded.len() - right.len()) >= end_bit,
                "offset {lead}: {shown}"
            );
        }
    }
}
