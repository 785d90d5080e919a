//! Images in the conversation: a file named in the prompt, an image an
//! editor sends, a `read_file` of a picture. A message keeps its images
//! (base64, in the session log too); a request body names each by a
//! short placeholder (`mm-image:…`, by content), so what mm measures and
//! traces stays small, and the client puts the data in as it sends.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use base64::Engine;

/// The most an image file may weigh (hosted APIs take 5 MB).
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// The scheme of a placeholder URL.
pub const SCHEME: &str = "mm-image:";

pub use crate::protocol::Image;

static STORE: Mutex<Option<HashMap<String, Arc<Image>>>> = Mutex::new(None);

impl Image {
    /// An image of these bytes, when they are one of the four kinds every
    /// vision API takes.
    pub fn from_bytes(name: &str, bytes: &[u8]) -> Option<Image> {
        Some(Image {
            name: name.to_string(),
            media_type: media_type(bytes)?.to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    }

    /// The placeholder a body names it by; the image is kept until the
    /// client sends it.
    pub fn placeholder(&self) -> String {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.data.hash(&mut h);
        let id = format!("{SCHEME}{:016x}", h.finish());
        if let Ok(mut store) = STORE.lock() {
            store
                .get_or_insert_with(HashMap::new)
                .entry(id.clone())
                .or_insert_with(|| Arc::new(self.clone()));
        }
        id
    }

    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }

    /// The size of the image's bytes, said the way people say sizes.
    pub fn size(&self) -> String {
        let bytes = self.data.len() / 4 * 3;
        if bytes >= 1024 * 1024 {
            format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
        } else {
            format!("{} KB", bytes.div_ceil(1024))
        }
    }
}

/// The image a placeholder names (None for any other URL).
pub fn resolve(url: &str) -> Option<Arc<Image>> {
    if !url.starts_with(SCHEME) {
        return None;
    }
    STORE.lock().ok()?.as_ref()?.get(url).cloned()
}

/// The kind of image these bytes are, by their first bytes.
pub fn media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Whether a file name says picture.
pub fn is_image_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|e| lower.ends_with(e))
}

/// The image in the file at `path` (a regular file, at most
/// `MAX_IMAGE_BYTES`, whose bytes are an image); why not otherwise.
pub fn from_file(path: &Path, name: &str) -> Result<Image, String> {
    let bytes = crate::paths::read_checked(path, MAX_IMAGE_BYTES)
        .map_err(|e| format!("cannot read {name}: {e}"))?;
    Image::from_bytes(name, &bytes)
        .ok_or_else(|| format!("{name} is not a PNG, JPEG, GIF or WebP image"))
}

/// The words of `text` as a shell would split them: whitespace apart,
/// quotes and backslashes keep a path with spaces whole (a path dropped
/// into a terminal comes as `'/a b/c.png'` or `/a\ b/c.png`).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            // A quote opens only at a word's start ("don't" is a word).
            (None, '\'' | '"') if cur.is_empty() => quote = Some(c),
            (None, '\\') => match chars.next() {
                Some(n) if n.is_whitespace() || n == '\\' || n == '\'' || n == '"' => cur.push(n),
                Some(n) => {
                    cur.push('\\');
                    cur.push(n);
                }
                None => cur.push('\\'),
            },
            (None, c) if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A word of a prompt as the picture path it may be: `@`, backticks,
/// brackets and a sentence's punctuation off; `file://` read as a path.
pub fn path_of_word(word: &str) -> String {
    let w = word
        .trim_start_matches(['@', '`', '"', '\'', '(', '<'])
        .trim_end_matches(['`', '"', '\'', ')', '>', ',', ';', ':', '!', '?']);
    let w = w.strip_suffix('.').unwrap_or(w);
    match w.strip_prefix("file://") {
        Some(rest) => rest.replace("%20", " "),
        None => w.to_string(),
    }
}

/// Pictures the user's own typed words name by an absolute or `~/` path,
/// wherever they are: a front end reads them from what was typed (never
/// from a file's text, a command's body, a plan or a helper's prompt) and
/// sends them with the message. Only files whose bytes are an image; at
/// most `max`. Each with the path it was named by.
pub fn typed(text: &str, max: usize) -> Vec<(String, Image)> {
    let mut out: Vec<(String, Image)> = Vec::new();
    for word in words(text) {
        let path = path_of_word(&word);
        if out.len() >= max || !is_image_name(&path) {
            continue;
        }
        let abs = match path.strip_prefix("~/") {
            Some(rest) => match std::env::var_os("HOME") {
                Some(home) => std::path::PathBuf::from(home).join(rest),
                None => continue,
            },
            None if path.starts_with('/') => std::path::PathBuf::from(&path),
            None => continue,
        };
        let name = abs
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Ok(img) = from_file(&abs, &name)
            && !out.iter().any(|(_, o)| o.data == img.data)
        {
            out.push((path, img));
        }
    }
    out
}

/// Puts the data of every placeholder in `body` (a chat-completions
/// body) in its place, as a data URL.
pub fn fill(body: &mut serde_json::Value) {
    let Some(messages) = body["messages"].as_array_mut() else {
        return;
    };
    for m in messages {
        let Some(parts) = m["content"].as_array_mut() else {
            continue;
        };
        for p in parts {
            let url = &mut p["image_url"]["url"];
            if let Some(img) = url.as_str().and_then(resolve) {
                *url = serde_json::json!(img.data_url());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn images_are_told_by_their_bytes_and_named_by_placeholders() {
        assert_eq!(media_type(PNG), Some("image/png"));
        assert_eq!(media_type(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(media_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type(b"%PDF-1.4"), None);
        assert!(Image::from_bytes("a.txt", b"hello").is_none());
        let img = Image::from_bytes("shot.png", PNG).unwrap();
        let id = img.placeholder();
        assert!(id.starts_with(SCHEME));
        assert_eq!(id, img.placeholder(), "the same bytes, the same name");
        assert_eq!(resolve(&id).unwrap().data, img.data);
        assert!(resolve("mm-image:0000000000000000").is_none());
        let mut body = serde_json::json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": id}},
        ]}]});
        fill(&mut body);
        assert_eq!(
            body["messages"][0]["content"][1]["image_url"]["url"],
            format!("data:image/png;base64,{}", img.data)
        );
    }
}
