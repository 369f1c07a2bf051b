//! Deterministic SplitMix64: the same seed gives the same values on every
//! platform and every build, so a failing seed reproduces.

use iggy_binary_protocol::{WireName, WireOptions};

pub struct Rng(u64);

const NAME_CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";

impl Rng {
    pub const fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo + 1) as u64) as usize
    }

    pub fn bool(&mut self) -> bool {
        self.next() & 1 == 1
    }

    /// A list length: 0, 1, 2, 3 or 5.
    pub fn count(&mut self) -> usize {
        [0, 1, 2, 3, 5][self.below(5) as usize]
    }

    pub fn u8(&mut self) -> u8 {
        self.next() as u8
    }

    pub fn u16(&mut self) -> u16 {
        match self.below(8) {
            0 => 0,
            1 => u16::MAX,
            _ => self.next() as u16,
        }
    }

    /// A u32 that is sometimes 0 or the maximum.
    pub fn u32(&mut self) -> u32 {
        match self.below(8) {
            0 => 0,
            1 => u32::MAX,
            2 => self.below(100) as u32,
            _ => self.next() as u32,
        }
    }

    /// A u64 that is sometimes 0, the maximum, or past 2^53.
    pub fn u64(&mut self) -> u64 {
        match self.below(8) {
            0 => 0,
            1 => u64::MAX,
            2 => self.below(1000),
            3 => (1 << 53) + self.below(1000),
            _ => self.next(),
        }
    }

    pub fn u128(&mut self) -> u128 {
        match self.below(8) {
            0 => 0,
            1 => u128::MAX,
            _ => (u128::from(self.next()) << 64) | u128::from(self.next()),
        }
    }

    /// A nonzero u128 (client ids, request stamps).
    pub fn u128_nonzero(&mut self) -> u128 {
        loop {
            let v = self.u128();
            if v != 0 {
                return v;
            }
        }
    }

    pub fn f32(&mut self) -> f32 {
        (self.below(1_000_000) as f32) / 1000.0
    }

    pub fn bytes(&mut self, lo: usize, hi: usize) -> Vec<u8> {
        let n = self.range(lo, hi);
        (0..n).map(|_| self.u8()).collect()
    }

    /// A UTF-8 string of `lo..=hi` bytes, sometimes with a two-byte character.
    pub fn string(&mut self, lo: usize, hi: usize) -> String {
        let n = self.range(lo, hi);
        let mut s = String::with_capacity(n);
        while s.len() < n {
            if n - s.len() >= 2 && self.below(10) == 0 {
                s.push('é');
            } else {
                s.push(NAME_CHARS[self.below(NAME_CHARS.len() as u64) as usize] as char);
            }
        }
        s
    }

    /// A name of 1..=255 bytes, often short, sometimes 1 or 255.
    pub fn name(&mut self) -> WireName {
        let s = match self.below(8) {
            0 => self.string(1, 1),
            1 => self.string(255, 255),
            2 => self.string(1, 255),
            _ => self.string(1, 24),
        };
        WireName::new(s).expect("1..=255 bytes")
    }

    /// An options block of 0..=3 entries: string keys (kind 2), unique, and
    /// values of any kind the codec knows.
    pub fn options(&mut self) -> WireOptions {
        let n = self.below(4);
        let mut entries: Vec<(u8, Vec<u8>, u8, Vec<u8>)> = Vec::new();
        for i in 0..n {
            let key = format!("{}.{i}", self.string(1, 12));
            let kind = 1 + self.below(15) as u8;
            let value = self.bytes(1, 20);
            entries.push((2, key.into_bytes(), kind, value));
        }
        let refs: Vec<(u8, &[u8], u8, &[u8])> = entries
            .iter()
            .map(|(kk, k, vk, v)| (*kk, k.as_slice(), *vk, v.as_slice()))
            .collect();
        let mut buf = bytes::BytesMut::new();
        iggy_binary_protocol::encode_user_headers(&refs, &mut buf);
        WireOptions::from_slice(&buf).expect("generated options are valid")
    }

    /// A user-headers block of 0..=2 entries (any key and value kinds).
    pub fn user_headers(&mut self) -> Vec<u8> {
        let n = self.below(3);
        let mut entries: Vec<(u8, Vec<u8>, u8, Vec<u8>)> = Vec::new();
        for _ in 0..n {
            let key_kind = 1 + self.below(15) as u8;
            let key = self.bytes(1, 10);
            let value_kind = 1 + self.below(15) as u8;
            let value = self.bytes(1, 16);
            entries.push((key_kind, key, value_kind, value));
        }
        let refs: Vec<(u8, &[u8], u8, &[u8])> = entries
            .iter()
            .map(|(kk, k, vk, v)| (*kk, k.as_slice(), *vk, v.as_slice()))
            .collect();
        let mut buf = bytes::BytesMut::new();
        iggy_binary_protocol::encode_user_headers(&refs, &mut buf);
        buf.to_vec()
    }
}
