//! Messages as one line of text, for printing and logs: GNU Radio's PMT notation, with every
//! character that is not printable escaped so that a message cannot forge lines or control a
//! terminal.

use sluice_queue::{TagValue, Uniform};
use std::fmt::Write;

/// Elements of a uniform vector shown before the rest is summarised.
const SHOWN: usize = 16;

/// `msg` in PMT notation on one line: `()` nil, `#t`/`#f`, numbers, symbols (escaped),
/// `(a . b)` pairs, `{a b}` tuples, `#(a b)` vectors, `((k . v) …)` dicts, `#[1 2 …]` uniform
/// vectors (the first 16 elements and the count).
pub fn message_text(msg: &TagValue) -> String {
    let mut out = String::new();
    write_value(&mut out, msg);
    out
}

fn write_value(out: &mut String, v: &TagValue) {
    match v {
        TagValue::Null => out.push_str("()"),
        TagValue::Bool(b) => out.push_str(if *b { "#t" } else { "#f" }),
        TagValue::I64(i) => {
            let _ = write!(out, "{i}");
        }
        TagValue::U64(u) => {
            let _ = write!(out, "{u}");
        }
        TagValue::F64(x) => {
            let _ = write!(out, "{x}");
        }
        TagValue::Complex(c) => {
            let _ = write!(out, "{}{:+}i", c.re, c.im);
        }
        TagValue::Str(s) => out.extend(s.chars().flat_map(char::escape_debug)),
        TagValue::Pair(pair) => {
            out.push('(');
            write_value(out, &pair.0);
            out.push_str(" . ");
            write_value(out, &pair.1);
            out.push(')');
        }
        TagValue::Tuple(items) => write_list(out, "{", items, "}"),
        TagValue::Vector(items) => write_list(out, "#(", items, ")"),
        TagValue::Dict(entries) => {
            out.push('(');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push('(');
                write_value(out, k);
                out.push_str(" . ");
                write_value(out, v);
                out.push(')');
            }
            out.push(')');
        }
        TagValue::Uniform(u) => write_uniform(out, u),
    }
}

fn write_list(out: &mut String, open: &str, items: &[TagValue], close: &str) {
    out.push_str(open);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_value(out, item);
    }
    out.push_str(close);
}

fn write_uniform(out: &mut String, u: &Uniform) {
    fn elements<T: std::fmt::Display>(out: &mut String, v: &[T]) {
        for (i, x) in v.iter().take(SHOWN).enumerate() {
            if i > 0 {
                out.push(' ');
            }
            let _ = write!(out, "{x}");
        }
    }
    out.push_str("#[");
    match u {
        Uniform::U8(v) => elements(out, v),
        Uniform::I8(v) => elements(out, v),
        Uniform::U16(v) => elements(out, v),
        Uniform::I16(v) => elements(out, v),
        Uniform::U32(v) => elements(out, v),
        Uniform::I32(v) => elements(out, v),
        Uniform::U64(v) => elements(out, v),
        Uniform::I64(v) => elements(out, v),
        Uniform::F32(v) => elements(out, v),
        Uniform::F64(v) => elements(out, v),
        Uniform::C32(v) => elements(out, v),
        Uniform::C64(v) => elements(out, v),
    }
    if u.len() > SHOWN {
        let _ = write!(out, " … {} {} in all", u.len(), u.type_name());
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_print_on_one_escaped_line() {
        let msg = TagValue::Pair(Box::new((
            TagValue::Dict(vec![(
                TagValue::Str("name".into()),
                TagValue::Str("a\nb\u{1b}".into()),
            )]),
            TagValue::Uniform(Uniform::U8((0..20).collect::<Vec<u8>>().into())),
        )));
        let text = message_text(&msg);
        assert_eq!(
            text,
            "(((name . a\\nb\\u{1b})) . #[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 … 20 u8 in all])"
        );
        assert!(!text.contains('\n'));
        let tuple = TagValue::Tuple(vec![
            TagValue::Bool(true),
            TagValue::I64(-3),
            TagValue::Null,
        ]);
        assert_eq!(message_text(&tuple), "{#t -3 ()}");
    }
}
