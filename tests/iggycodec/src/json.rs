//! A minimal one-line JSON writer: the oracle prints values, it never parses.

use std::fmt::Write as _;

/// A JSON value. Object keys keep their insertion order.
pub enum J {
    Null,
    Bool(bool),
    /// A number, already formatted.
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(&'static str, J)>),
}

impl J {
    /// A JSON number for integers up to 32 bits (exact in every JSON reader).
    pub fn n(v: impl Into<u64>) -> Self {
        Self::Num(v.into().to_string())
    }

    /// A decimal string for a u64 (JSON numbers lose precision past 2^53).
    pub fn s64(v: u64) -> Self {
        Self::Str(v.to_string())
    }

    /// A decimal string for a u128.
    pub fn s128(v: u128) -> Self {
        Self::Str(v.to_string())
    }

    /// A JSON number for an f32, in Rust's shortest round-trip form.
    pub fn f(v: f32) -> Self {
        Self::Num(format!("{v:?}"))
    }

    pub fn s(v: &str) -> Self {
        Self::Str(v.to_string())
    }

    /// Lower-case hex of a byte blob, "" when empty.
    pub fn hex(v: &[u8]) -> Self {
        if v.is_empty() {
            Self::Str(String::new())
        } else {
            Self::Str(crate::hex(v))
        }
    }

    pub fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Self) -> Self {
        v.map_or(Self::Null, f)
    }

    pub fn arr<T>(items: impl IntoIterator<Item = T>, f: impl FnMut(T) -> Self) -> Self {
        Self::Arr(items.into_iter().map(f).collect())
    }

    pub fn write(&self, out: &mut String) {
        match self {
            Self::Null => out.push_str("null"),
            Self::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Self::Num(n) => out.push_str(n),
            Self::Str(s) => write_str(s, out),
            Self::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Self::Obj(fields) => {
                out.push('{');
                for (i, (key, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    pub fn to_line(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
