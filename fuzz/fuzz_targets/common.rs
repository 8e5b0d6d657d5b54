//! Shared by the fuzz targets that check a decoder against chunking.

/// The fuzzer's bytes as a body and a point to split it at (the first byte picks it).
pub fn body_and_split(data: &[u8]) -> Option<(&[u8], usize)> {
    let (&first, body) = data.split_first()?;
    Some((body, (first as usize % data.len()).min(body.len())))
}
