//! Numeric CSV (the optdigits layout): pixels then an integer label per row, raw or gzip'd; or with a header row that names the label's column (Kaggle's `label,pixel0,…`, pandas' `,0,…,label`).
//!
//! Ours, not the `csv` 1.4.0 crate (issue 17; `benches/io_crates`, median of 21 interleaved runs
//! on a loaded 2-core VM): the 1797 × 65 optdigits file parses in 2.19 ms here and 2.19 ms with
//! `csv` doing the same number checks (2.88 and 2.87 ms gzip'd); float parsing dominates. (Before
//! the error position was formatted lazily, ours took 11.7 ms.) The crate would change what is accepted (quoted fields, lone `\r` line
//! ends, whitespace-only lines as one-field records) and its errors count records, not the
//! lines and columns ours name.

use std::fmt::Write as _;
use std::path::Path;

use super::atomic::write_atomic;
use super::input::{input_limit, Input};
use super::Pixels;
use crate::{Error, Result};

/// The content of a CSV dataset: `n` rows of `d` pixels and one label each.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvData {
    /// Number of rows.
    pub n: usize,
    /// Pixels per row (fields minus the label column).
    pub d: usize,
    /// `U8` when every pixel is an integer in 0..=255, else `F32`.
    pub pixels: Pixels,
    /// Each row's label: the column a header names `label` (or `class`, `target`, `y`), else
    /// the last.
    pub labels: Vec<u32>,
    /// The largest pixel value.
    pub max_value: f32,
}

/// Reads a CSV file (gzip'd or plain) within the global input limit: every non-blank line is
/// `pixel,pixel,…,label`, after an optional header row (`is_header`) that may name another
/// column the label (`label`, `class`, `target` or `y`) and leave out pandas' unnamed index.
pub fn read_csv(path: &Path) -> Result<CsvData> {
    read_csv_with_limit(path, input_limit()?)
}

/// [`read_csv`] with an explicit decompressed-size limit.
pub fn read_csv_with_limit(path: &Path, limit: u64) -> Result<CsvData> {
    parse_csv(Input::open(path, limit)?)
}

/// Shortens a field for an error message.
fn shown(field: &str) -> String {
    let mut s: String = field.chars().take(40).collect();
    if s.len() < field.len() {
        s.push('…');
    }
    s
}

/// Parses the whole stream of `input`; errors give 1-based line and column numbers.
pub(crate) fn parse_csv(mut input: Input) -> Result<CsvData> {
    let bytes = input.read_rest()?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        input.error(format!(
            "not a text (CSV) file: invalid UTF-8 at byte {}",
            e.valid_up_to()
        ))
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut values: Vec<f32> = Vec::new();
    let mut labels = Vec::new();
    let mut width: Option<(usize, usize)> = None; // (fields per row, line that set it)
    let mut label_col: Option<usize> = None; // named by a header row
    let mut index_col: Option<usize> = None; // a header's unnamed first column (pandas' index)
    let mut fields: Vec<&str> = Vec::new(); // reused from line to line
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        fields.clear();
        fields.extend(line.split(','));
        let count = fields.len();
        if width.is_none() && is_header(&fields) {
            label_col = Some(header_label_column(&fields));
            index_col = name(fields[0]).is_empty().then_some(0);
            width = Some((count, line_no));
            continue;
        }
        match width {
            None if count < 2 => {
                return Err(input.error(format!(
                    "line {line_no}: {count} field(s); expected pixels then a label (at least 2)"
                )))
            }
            None => width = Some((count, line_no)),
            Some((expected, first)) if expected != count => {
                return Err(input.error(format!(
                    "line {line_no}: {count} fields, but line {first} has {expected} \
                     (every row must have the same number of fields)"
                )))
            }
            Some(_) => {}
        }
        let label_at = label_col.unwrap_or(count - 1);
        for (col, field) in fields.iter().enumerate() {
            if col == label_at || Some(col) == index_col {
                continue;
            }
            // Formatted only for a message: building it for every field made parsing 5× slower.
            let at = || format!("line {line_no}, column {}", col + 1);
            let v: f32 = field
                .trim()
                .parse()
                .map_err(|_| input.error(format!("{}: not a number: {:?}", at(), shown(field))))?;
            if !v.is_finite() {
                let msg = format!(
                    "{}: value {:?} is not finite (NaN or infinity)",
                    at(),
                    shown(field)
                );
                return Err(input.error(msg));
            }
            values.push(v);
        }
        let field = fields[label_at].trim();
        let label = field.parse::<u32>().ok().or_else(|| {
            // Tolerate "3.0" (written by float-typed tools) but nothing fractional.
            let v = field.parse::<f64>().ok()?;
            (v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v)).then_some(v as u32)
        });
        let label = label.ok_or_else(|| {
            input.error(format!(
                "line {line_no}, column {}: the label must be a non-negative integer, found {:?}",
                label_at + 1,
                shown(field)
            ))
        })?;
        labels.push(label);
    }
    let Some((fields, _)) = width.filter(|_| !labels.is_empty()) else {
        return Err(input.error("no data rows (the CSV file is empty)"));
    };
    if label_col.is_none() {
        refuse_label_first(&input, &values, fields - 1, &labels)?;
    }
    let max_value = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let bytes_ok = values
        .iter()
        .all(|&v| v.fract() == 0.0 && (0.0..=255.0).contains(&v));
    let pixels = if bytes_ok {
        Pixels::U8(values.into_iter().map(|v| v as u8).collect())
    } else {
        Pixels::F32(values)
    };
    Ok(CsvData {
        n: labels.len(),
        d: fields - 1 - usize::from(index_col.is_some()),
        pixels,
        labels,
        max_value,
    })
}

/// Whether a field reads as a number.
fn is_number(field: &str) -> bool {
    field.trim().parse::<f64>().is_ok()
}

/// A header field's name: trimmed, quotes stripped, lower case.
fn name(field: &str) -> String {
    field.trim().trim_matches('"').to_ascii_lowercase()
}

/// Whether `name` names the label's column.
fn is_label_name(name: &str) -> bool {
    matches!(name, "label" | "class" | "target" | "y")
}

/// Whether the first row is a header: no field a number (Kaggle's `label,pixel0,…`), or
/// numbered columns beside one that names the label (pandas' `,0,1,…,label`, its unnamed
/// index first), every other field a name (empty, or from a letter or `_`). A data row with a
/// stray word is neither, and is refused where the word stands.
fn is_header(fields: &[&str]) -> bool {
    let words: Vec<String> = fields
        .iter()
        .filter(|f| !is_number(f))
        .map(|f| name(f))
        .collect();
    let all_words = words.len() == fields.len();
    let name_like =
        |w: &String| w.is_empty() || w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    fields.len() >= 2
        && (all_words || (words.iter().any(|w| is_label_name(w)) && words.iter().all(name_like)))
}

/// The label's column in a header row: the field named `label`, `class`, `target` or `y`
/// (any case, quotes stripped), else the last.
fn header_label_column(names: &[&str]) -> usize {
    let named = |field: &&str| is_label_name(&name(field));
    names.iter().position(named).unwrap_or(names.len() - 1)
}

/// Refuses a headerless file of square images whose label looks first (Kaggle's MNIST CSVs
/// without their header): over at least 10 rows, every row's last field, taken as its label,
/// is one value, while the first holds a few distinct small integers. Read as the layout says,
/// its images would be shifted by one pixel and every row one class, with nothing said. (A
/// one-class file that trips this reads with a header row naming its last column `label`.)
fn refuse_label_first(input: &Input, values: &[f32], d: usize, labels: &[u32]) -> Result<()> {
    let square = d >= 16 && d.isqrt().pow(2) == d;
    if !square || labels.len() < 10 || labels.iter().any(|&l| l != labels[0]) {
        return Ok(());
    }
    let first: Vec<f32> = values.iter().step_by(d).copied().collect();
    let small = first
        .iter()
        .all(|&v| v.fract() == 0.0 && (0.0..100.0).contains(&v));
    let mut distinct: Vec<u32> = first.iter().map(|&v| v as u32).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if !small || distinct.len() < 2 {
        return Ok(());
    }
    Err(input.error(format!(
        "every row's last field, its label in rmld's layout (pixels, then the label), is {}, \
         while the first field holds {} distinct small integers: the label looks first (as in \
         Kaggle's CSVs). Move it last, or add a header row naming its column `label`",
        labels[0],
        distinct.len()
    )))
}

/// Writes `labels.len()` rows of `d` pixels followed by the label, atomically (plain text).
pub fn write_csv(path: &Path, d: usize, pixels: &Pixels, labels: &[u32]) -> Result<()> {
    let len = match pixels {
        Pixels::U8(v) => v.len(),
        Pixels::F32(v) => v.len(),
    };
    if Some(len) != d.checked_mul(labels.len()) || d == 0 {
        return Err(Error::Internal(format!(
            "CSV writer: {len} pixels do not make {} rows of {d}",
            labels.len()
        )));
    }
    write_atomic(path, |w| {
        let mut line = String::new();
        for (row, label) in labels.iter().enumerate() {
            line.clear();
            for col in 0..d {
                // `{}` on f32 prints the shortest text that parses back to the same value.
                let _ = match pixels {
                    Pixels::U8(v) => write!(line, "{},", v[row * d + col]),
                    Pixels::F32(v) => write!(line, "{},", v[row * d + col]),
                };
            }
            let _ = writeln!(line, "{label}");
            w.write_all(line.as_bytes())?;
        }
        Ok(())
    })
}
