//! Text a peer sent, made safe for a log line or a terminal: control characters (terminal
//! escapes, newlines that would forge log lines) and invalid UTF-8 become visible escapes.

/// `text` with every control character escaped as Rust writes it (`\u{1b}`, `\n`, ...).
pub fn text(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// Bytes a peer sent, as text: invalid UTF-8 as U+FFFD, then [`text`].
pub fn bytes(bytes: &[u8]) -> String {
    text(&String::from_utf8_lossy(bytes))
}

#[cfg(test)]
mod tests {
    #[test]
    fn terminal_escapes_and_newlines_are_made_visible() {
        let hostile = "ok\x1b[2J\x1b]0;owned\x07\nsluice: forged line\r";
        let shown = super::text(hostile);
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert_eq!(
            shown,
            "ok\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\nsluice: forged line\\r"
        );
        assert_eq!(super::bytes(b"a\xffb\x00"), "a\u{fffd}b\\u{0}");
    }
}
