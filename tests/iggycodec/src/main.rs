//! iggycodec: a differential oracle for kiggy's Iggy binary protocol 0.12
//! codec. It wraps Apache Iggy's own `iggy_binary_protocol` crate behind a
//! line protocol on stdin/stdout; see README.md for the commands.

mod json;
mod reply;
mod request;
mod rng;

use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};

use iggy_binary_protocol::consensus::operation_for_code;
use iggy_binary_protocol::{lookup_command, IGGY_PROTOCOL_VERSION, IGGY_PROTOCOL_VERSION_MIN};

/// Lower-case hex, `-` for no bytes (so every field is non-empty).
pub fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "-".to_string();
    }
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if s == "-" {
        return Ok(Vec::new());
    }
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd-length hex ({} digits)", s.len()));
    }
    let digit = |c: u8| -> Result<u8, String> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(format!("bad hex digit {:?}", c as char)),
        }
    };
    s.as_bytes()
        .chunks(2)
        .map(|pair| Ok(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

fn arg<T: std::str::FromStr>(args: &[&str], i: usize, what: &str) -> Result<T, String> {
    let s = args.get(i).ok_or_else(|| format!("missing {what}"))?;
    s.parse().map_err(|_| format!("bad {what} {s:?}"))
}

fn handle(line: &str) -> Result<String, String> {
    let args: Vec<&str> = line.split_ascii_whitespace().collect();
    let Some(&command) = args.first() else {
        return Err("empty command".to_string());
    };
    match command {
        "version" => Ok(format!(
            "{IGGY_PROTOCOL_VERSION} {IGGY_PROTOCOL_VERSION_MIN}"
        )),
        "request" => {
            let frame = unhex(args.get(1).ok_or("missing frame hex")?)?;
            let checked = request::check(&frame)?;
            Ok(format!(
                "{} {} {}",
                checked.code,
                hex(&checked.body),
                checked.debug.replace(['\n', '\r'], " ")
            ))
        }
        "reply" => {
            let code: u32 = arg(&args, 1, "code")?;
            let seed: u64 = arg(&args, 2, "seed")?;
            let (body, json) = reply::reply(code, seed)?;
            Ok(format!("{} {}", hex(&body), json.to_line()))
        }
        "decode-reply" => {
            let code: u32 = arg(&args, 1, "code")?;
            let body = unhex(args.get(2).ok_or("missing body hex")?)?;
            let (reencoded, json) = reply::decode_reply(code, &body)?;
            Ok(format!("{} {}", hex(&reencoded), json.to_line()))
        }
        "reply-header" => {
            let code: u32 = arg(&args, 1, "code")?;
            let seed: u64 = arg(&args, 2, "seed")?;
            let (header, json) = reply::reply_header(code, seed)?;
            Ok(format!("{} {}", hex(&header), json.to_line()))
        }
        "eviction" => {
            let reason: u8 = arg(&args, 1, "reason")?;
            let max: u32 = arg(&args, 2, "max")?;
            let min: u32 = arg(&args, 3, "min")?;
            let client: u128 = if args.len() > 4 {
                arg(&args, 4, "client")?
            } else {
                1
            };
            Ok(hex(&reply::eviction(reason, max, min, client)?))
        }
        "reject" => {
            let result: u32 = arg(&args, 1, "result")?;
            Ok(hex(&reply::reject(result)))
        }
        "framing" => {
            let code: u32 = arg(&args, 1, "code")?;
            let meta = lookup_command(code)
                .ok_or_else(|| format!("command code {code} is not in the dispatch table"))?;
            Ok(format!(
                "{} {} {}",
                operation_for_code(code) as u8,
                u8::from(reply::result_framed(code)),
                meta.name
            ))
        }
        _ => Err(format!("unknown command {command:?}")),
    }
}

fn main() {
    // Decoder panics become `err` answers; keep stderr quiet about them.
    std::panic::set_hook(Box::new(|_| {}));
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let answer = match catch_unwind(AssertUnwindSafe(|| handle(line.trim()))) {
            Ok(Ok(answer)) => format!("ok {answer}"),
            Ok(Err(reason)) => format!("err {}", reason.replace(['\n', '\r'], " ")),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_default();
                format!("err panic: {}", what.replace(['\n', '\r'], " "))
            }
        };
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
    }
}
