//! A caption strip for the PNG grids: text drawn with a built-in 5 × 7 bitmap font, word-wrapped.
//!
//! Letters are drawn as capitals (the font has no lower case); characters the font lacks show as
//! `?`. The image crate draws no text and the project adds no font crate, so the glyphs are here:
//! the classic 5 × 7 LCD font, one byte per column, bit 0 the top row.

use image::{GrayImage, Luma};

/// Glyph columns, bit 0 at the top, for the characters of [`CHARSET`] in order.
const GLYPHS: &[[u8; 5]] = &[
    [0x00, 0x00, 0x00, 0x00, 0x00], // space
    [0x7E, 0x11, 0x11, 0x11, 0x7E], // A
    [0x7F, 0x49, 0x49, 0x49, 0x36], // B
    [0x3E, 0x41, 0x41, 0x41, 0x22], // C
    [0x7F, 0x41, 0x41, 0x22, 0x1C], // D
    [0x7F, 0x49, 0x49, 0x49, 0x41], // E
    [0x7F, 0x09, 0x09, 0x09, 0x01], // F
    [0x3E, 0x41, 0x49, 0x49, 0x7A], // G
    [0x7F, 0x08, 0x08, 0x08, 0x7F], // H
    [0x00, 0x41, 0x7F, 0x41, 0x00], // I
    [0x20, 0x40, 0x41, 0x3F, 0x01], // J
    [0x7F, 0x08, 0x14, 0x22, 0x41], // K
    [0x7F, 0x40, 0x40, 0x40, 0x40], // L
    [0x7F, 0x02, 0x0C, 0x02, 0x7F], // M
    [0x7F, 0x04, 0x08, 0x10, 0x7F], // N
    [0x3E, 0x41, 0x41, 0x41, 0x3E], // O
    [0x7F, 0x09, 0x09, 0x09, 0x06], // P
    [0x3E, 0x41, 0x51, 0x21, 0x5E], // Q
    [0x7F, 0x09, 0x19, 0x29, 0x46], // R
    [0x46, 0x49, 0x49, 0x49, 0x31], // S
    [0x01, 0x01, 0x7F, 0x01, 0x01], // T
    [0x3F, 0x40, 0x40, 0x40, 0x3F], // U
    [0x1F, 0x20, 0x40, 0x20, 0x1F], // V
    [0x3F, 0x40, 0x38, 0x40, 0x3F], // W
    [0x63, 0x14, 0x08, 0x14, 0x63], // X
    [0x07, 0x08, 0x70, 0x08, 0x07], // Y
    [0x61, 0x51, 0x49, 0x45, 0x43], // Z
    [0x3E, 0x51, 0x49, 0x45, 0x3E], // 0
    [0x00, 0x42, 0x7F, 0x40, 0x00], // 1
    [0x42, 0x61, 0x51, 0x49, 0x46], // 2
    [0x21, 0x41, 0x45, 0x4B, 0x31], // 3
    [0x18, 0x14, 0x12, 0x7F, 0x10], // 4
    [0x27, 0x45, 0x45, 0x45, 0x39], // 5
    [0x3C, 0x4A, 0x49, 0x49, 0x30], // 6
    [0x01, 0x71, 0x09, 0x05, 0x03], // 7
    [0x36, 0x49, 0x49, 0x49, 0x36], // 8
    [0x06, 0x49, 0x49, 0x29, 0x1E], // 9
    [0x00, 0x60, 0x60, 0x00, 0x00], // .
    [0x00, 0x50, 0x30, 0x00, 0x00], // ,
    [0x00, 0x36, 0x36, 0x00, 0x00], // :
    [0x00, 0x56, 0x36, 0x00, 0x00], // ;
    [0x00, 0x1C, 0x22, 0x41, 0x00], // (
    [0x00, 0x41, 0x22, 0x1C, 0x00], // )
    [0x08, 0x08, 0x08, 0x08, 0x08], // -
    [0x20, 0x10, 0x08, 0x04, 0x02], // /
    [0x14, 0x14, 0x14, 0x14, 0x14], // =
    [0x23, 0x13, 0x08, 0x64, 0x62], // %
    [0x00, 0x05, 0x03, 0x00, 0x00], // '
    [0x08, 0x08, 0x3E, 0x08, 0x08], // +
    [0x02, 0x01, 0x51, 0x09, 0x06], // ?
    [0x00, 0x00, 0x5F, 0x00, 0x00], // !
    [0x22, 0x14, 0x08, 0x14, 0x22], // ×
];

/// The characters [`GLYPHS`] draws, in its order.
const CHARSET: &str = " ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;()-/=%'+?!×";

/// Pixels per character cell (5 columns of glyph, 1 of space) and per line (7 rows, 3 of space).
const CELL_W: usize = 6;
const LINE_H: usize = 10;
/// Margin around the text, in font pixels.
const MARGIN: usize = 3;
/// Caption ink and background.
const INK: u8 = 255;
const BACKGROUND: u8 = 0;

/// The glyph of `c` (capitals for letters; `?` where the font has none).
fn glyph(c: char) -> [u8; 5] {
    let upper = c.to_uppercase().next().unwrap_or(c);
    let index = CHARSET
        .chars()
        .position(|k| k == upper)
        .or_else(|| CHARSET.chars().position(|k| k == '?'))
        .unwrap_or(0);
    GLYPHS[index]
}

/// `text` broken at spaces into lines of at most `columns` characters (a longer word is cut).
pub(crate) fn wrap(text: &str, columns: usize) -> Vec<String> {
    let columns = columns.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = line.chars().count();
            let room = if used == 0 {
                columns
            } else {
                columns.saturating_sub(used + 1)
            };
            if word.len() <= room {
                if used > 0 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            // A word longer than a line: cut it.
            let rest = word.split_off(columns);
            lines.push(word.iter().collect());
            word = rest;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The text's font scale for a picture `width` pixels wide: 2 from 480 pixels up, else 1.
fn scale_for(width: usize) -> usize {
    if width >= 480 {
        2
    } else {
        1
    }
}

/// A strip `width` pixels wide holding `text`, white capitals on black, wrapped to the width.
pub(crate) fn caption_strip(text: &str, width: usize) -> GrayImage {
    let s = scale_for(width);
    let columns = (width.saturating_sub(2 * MARGIN * s) / (CELL_W * s)).max(1);
    let lines = wrap(text, columns);
    let height = (lines.len() * LINE_H + 2 * MARGIN) * s;
    let mut strip = GrayImage::from_pixel(width as u32, height as u32, Luma([BACKGROUND]));
    for (row, line) in lines.iter().enumerate() {
        let top = (MARGIN + row * LINE_H) * s;
        for (col, c) in line.chars().enumerate() {
            let left = (MARGIN + col * CELL_W) * s;
            for (x, bits) in glyph(c).iter().enumerate() {
                for y in 0..7 {
                    if bits >> y & 1 == 0 {
                        continue;
                    }
                    for dy in 0..s {
                        for dx in 0..s {
                            let (px, py) = (left + x * s + dx, top + y * s + dy);
                            if px < width {
                                strip.put_pixel(px as u32, py as u32, Luma([INK]));
                            }
                        }
                    }
                }
            }
        }
    }
    strip
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_font_has_one_glyph_per_character() {
        assert_eq!(CHARSET.chars().count(), GLYPHS.len());
        assert_eq!(glyph('a'), glyph('A'));
        assert_eq!(glyph('~'), glyph('?'));
    }

    #[test]
    fn lines_break_at_spaces_and_long_words_are_cut() {
        assert_eq!(wrap("top: the starts", 9), vec!["top: the", "starts"]);
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("a  b", 10), vec!["a b"]);
        assert_eq!(wrap("abcd efgh i", 4), vec!["abcd", "efgh", "i"]);
        for line in wrap("the quick brown fox jumps over the lazy dog", 7) {
            assert!(line.chars().count() <= 7, "{line}");
        }
    }

    #[test]
    fn the_letter_t_is_drawn_where_expected() {
        let strip = caption_strip("T", 40);
        // Scale 1: the glyph's top row spans columns MARGIN..MARGIN + 5 at row MARGIN.
        for x in 0..5 {
            assert_eq!(
                strip.get_pixel((MARGIN + x) as u32, MARGIN as u32)[0],
                INK,
                "column {x}"
            );
        }
        // Its stem is the middle column, rows 1..7; the columns beside it are empty below row 0.
        for y in 1..7 {
            let row = (MARGIN + y) as u32;
            assert_eq!(
                strip.get_pixel((MARGIN + 2) as u32, row)[0],
                INK,
                "stem row {y}"
            );
            assert_eq!(
                strip.get_pixel(MARGIN as u32, row)[0],
                BACKGROUND,
                "left row {y}"
            );
        }
    }
}
