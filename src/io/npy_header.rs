//! The NPY header: a strict parser for its Python-literal dict, and the v1.0 encoder.
//!
//! Ours rather than a crate's: `npyz` and `ndarray-npy` parse the dict as a general Python
//! literal (`ndarray-npy` through `py_literal` and `pest`) and are not used for the reasons
//! given in [`super::npy`]; this parser accepts exactly the three keys NumPy writes.

/// The three fields of an NPY header dict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyHeader {
    /// The dtype string, e.g. `<f4` or `|u1`.
    pub descr: String,
    /// True for column-major data.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<u64>,
}

/// A header value: only the literal kinds NumPy writes.
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
}

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self
            .text
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_whitespace())
        {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.text.get(self.pos).copied()
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("expected {what} at offset {}", self.pos))
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn string(&mut self) -> Result<String, String> {
        let Some(quote @ (b'\'' | b'"')) = self.peek() else {
            return self.fail("a quoted string");
        };
        let start = self.pos + 1;
        let len = self.text[start..].iter().position(|&c| c == quote);
        let Some(len) = len else {
            return self.fail("a closing quote");
        };
        self.pos = start + len + 1;
        Ok(String::from_utf8_lossy(&self.text[start..start + len]).into_owned())
    }

    fn integer(&mut self) -> Result<u64, String> {
        self.skip_ws();
        let start = self.pos;
        while self.text.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        let digits = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or("");
        let Ok(v) = digits.parse::<u64>() else {
            return self.fail("a non-negative integer");
        };
        // Python 2 wrote longs as `5L`.
        if self.text.get(self.pos) == Some(&b'L') {
            self.pos += 1;
        }
        Ok(v)
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some(b'\'' | b'"') => self.string().map(Value::Str),
            Some(b'(') => {
                self.pos += 1;
                let mut items = Vec::new();
                while !self.eat(b')') {
                    items.push(self.integer()?);
                    if !self.eat(b',') && self.peek() != Some(b')') {
                        return self.fail("',' or ')' in the shape tuple");
                    }
                }
                Ok(Value::Tuple(items))
            }
            Some(b'[') => Err("structured dtypes (a list descr) are not supported".into()),
            _ => {
                let rest = &self.text[self.pos..];
                for (word, v) in [(&b"True"[..], true), (&b"False"[..], false)] {
                    if rest.starts_with(word) {
                        self.pos += word.len();
                        return Ok(Value::Bool(v));
                    }
                }
                self.fail("a string, a tuple, True or False")
            }
        }
    }
}

/// Parses the header dict, e.g. `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
/// Exactly the keys `descr`, `fortran_order` and `shape` are accepted, as NumPy requires.
pub fn parse_header(text: &[u8]) -> Result<NpyHeader, String> {
    let mut p = Parser { text, pos: 0 };
    if !p.eat(b'{') {
        return p.fail("'{' opening the header dict");
    }
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    while !p.eat(b'}') {
        let key = p.string()?;
        if !p.eat(b':') {
            return p.fail("':' after a key");
        }
        let value = p.value()?;
        let slot_taken = match (key.as_str(), value) {
            ("descr", Value::Str(s)) => descr.replace(s).is_some(),
            ("fortran_order", Value::Bool(b)) => fortran.replace(b).is_some(),
            ("shape", Value::Tuple(t)) => shape.replace(t).is_some(),
            ("descr" | "fortran_order" | "shape", _) => {
                return Err(format!("key '{key}' has a value of the wrong kind"))
            }
            _ => return Err(format!("unexpected key '{key}'")),
        };
        if slot_taken {
            return Err(format!("duplicate key '{key}'"));
        }
        if !p.eat(b',') && p.peek() != Some(b'}') {
            return p.fail("',' or '}' after a value");
        }
    }
    if p.peek().is_some() {
        return p.fail("only padding after the header dict");
    }
    match (descr, fortran, shape) {
        (Some(descr), Some(fortran_order), Some(shape)) => Ok(NpyHeader {
            descr,
            fortran_order,
            shape,
        }),
        _ => Err("missing key: 'descr', 'fortran_order' and 'shape' are all required".into()),
    }
}

/// The NPY magic string.
pub const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The full preamble (magic, version, length, dict, padding): version 1.0 with the total padded to
/// a multiple of 64 bytes like NumPy writes; version 2.0 only if the dict would not fit in v1.0.
pub fn encode_header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let tuple = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    let v1 = dict.len() + 1 + 10 <= usize::from(u16::MAX);
    let prefix = if v1 { 10 } else { 12 };
    let padded = (prefix + dict.len() + 1).div_ceil(64) * 64;
    let header_len = padded - prefix;
    let mut out = NPY_MAGIC.to_vec();
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(padded - 1, b' ');
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numpy_headers() {
        let h =
            parse_header(b"{'descr': '|u1', 'fortran_order': False, 'shape': (5000, 784), }  \n")
                .unwrap();
        assert_eq!(h.descr, "|u1");
        assert_eq!(h.shape, vec![5000, 784]);
        let h =
            parse_header(b"{\"shape\":(7L,),\"descr\":\"<f8\",\"fortran_order\":True}").unwrap();
        assert!(h.fortran_order);
        assert_eq!(h.shape, vec![7]);
        assert_eq!(
            parse_header(b"{'descr':'<f4','fortran_order':False,'shape':()}")
                .unwrap()
                .shape,
            Vec::<u64>::new()
        );
    }

    #[test]
    fn rejects_bad_headers() {
        for bad in [
            &b"'descr': '<f4'"[..],
            b"{'descr': '<f4', 'fortran_order': False}",
            b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, -4)}",
            b"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}",
            b"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}",
            b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}",
            b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} junk",
            b"{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}",
            b"{'descr: '<f4'",
        ] {
            assert!(
                parse_header(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn encodes_v1_padded_to_64() {
        let h = encode_header("<f4", &[3]);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(*h.last().unwrap(), b'\n');
        let parsed = parse_header(&h[10..]).unwrap();
        assert_eq!(parsed.shape, vec![3]);
        // Byte-identical to what NumPy wrote for the Quick Draw subset files.
        let mut numpy = b"\x93NUMPY\x01\x00v\x00".to_vec();
        numpy
            .extend_from_slice(b"{'descr': '|u1', 'fortran_order': False, 'shape': (5000, 784), }");
        numpy.resize(127, b' ');
        numpy.push(b'\n');
        assert_eq!(encode_header("|u1", &[5000, 784]), numpy);
    }
}
