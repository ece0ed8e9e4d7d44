//! Text that came from the other party (alert reasons, the judge's reject reason, link
//! refusals, client names) is shown on the user's terminal and written to logs. Left
//! raw, a hostile peer could send escape sequences that clear the screen, rewrite
//! earlier lines or hide text. So it is made inert where it is decoded: printable
//! Unicode is kept, invalid UTF-8 becomes U+FFFD, and every control or bidirectional
//! formatting character becomes a visible `\u{..}` escape.

/// The peer's `bytes` as text safe to print anywhere.
pub fn sanitize(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_unsafe(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Control characters (C0, DEL, C1: escape sequences start with ESC or CSI) and the
/// bidirectional overrides and isolates, which reorder what the reader sees.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn escapes_control_characters_and_keeps_printable_unicode() {
        assert_eq!(sanitize(b"\x1b[2J\x1b[Hgone"), "\\u{1b}[2J\\u{1b}[Hgone");
        assert_eq!(
            sanitize("caf\u{e9} \u{2713}\n".as_bytes()),
            "caf\u{e9} \u{2713}\\u{a}"
        );
        assert_eq!(
            sanitize("\u{9b}31m\u{202e}".as_bytes()),
            "\\u{9b}31m\\u{202e}"
        );
        assert_eq!(sanitize(b"\xff!"), "\u{fffd}!");
    }
}
