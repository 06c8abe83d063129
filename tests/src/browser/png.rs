//! Just enough of PNG to check a screenshot: its size, and whether it shows anything.

use std::io::Read;

/// The image's width and height, from its header.
pub fn size(png: &[u8]) -> Option<(u32, u32)> {
    if !png.starts_with(b"\x89PNG\r\n\x1a\n") || png.get(12..16)? != b"IHDR" {
        return None;
    }
    let word = |at: usize| Some(u32::from_be_bytes(png.get(at..at + 4)?.try_into().ok()?));
    Some((word(16)?, word(20)?))
}

/// The image's data chunks, joined and inflated: filtered scanlines.
fn scanlines(png: &[u8]) -> Option<Vec<u8>> {
    let mut at = 8;
    let mut deflated = Vec::new();
    while at + 8 <= png.len() {
        let length = u32::from_be_bytes(png[at..at + 4].try_into().ok()?) as usize;
        let kind = &png[at + 4..at + 8];
        let data = png.get(at + 8..at + 8 + length)?;
        if kind == b"IDAT" {
            deflated.extend_from_slice(data);
        }
        at += 12 + length;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&deflated[..])
        .read_to_end(&mut raw)
        .ok()?;
    Some(raw)
}

/// True when the image is not one flat colour. A flat image, filtered line by line, holds
/// a handful of byte values (the colour's, the filter types', zero); a page with text and
/// edges holds most of them.
pub fn shows_something(png: &[u8]) -> bool {
    let Some(raw) = scanlines(png) else {
        return false;
    };
    let mut seen = [false; 256];
    for byte in raw {
        seen[byte as usize] = true;
    }
    seen.iter().filter(|s| **s).count() > 32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A `width` × `height` RGB image, every pixel made by `pixel`.
    fn png(width: u32, height: u32, pixel: impl Fn(u32, u32) -> [u8; 3]) -> Vec<u8> {
        let mut raw = Vec::new();
        for y in 0..height {
            raw.push(0);
            for x in 0..width {
                raw.extend_from_slice(&pixel(x, y));
            }
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&raw).unwrap();
        let idat = z.finish().unwrap();
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut chunk = |kind: &[u8], data: &[u8]| {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            out.extend_from_slice(kind);
            out.extend_from_slice(data);
            out.extend_from_slice(&[0; 4]);
        };
        let mut header = Vec::new();
        header.extend_from_slice(&width.to_be_bytes());
        header.extend_from_slice(&height.to_be_bytes());
        header.extend_from_slice(&[8, 2, 0, 0, 0]);
        chunk(b"IHDR", &header);
        chunk(b"IDAT", &idat);
        chunk(b"IEND", &[]);
        out
    }

    #[test]
    fn a_flat_image_is_blank_and_a_varied_one_is_not() {
        let flat = png(64, 48, |_, _| [255, 255, 255]);
        assert_eq!(size(&flat), Some((64, 48)));
        assert!(!shows_something(&flat));
        let varied = png(64, 48, |x, y| [(x * 4) as u8, (y * 5) as u8, (x ^ y) as u8]);
        assert!(shows_something(&varied));
        assert_eq!(size(b"not a png"), None);
    }
}
