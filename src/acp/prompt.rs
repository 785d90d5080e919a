//! A client's prompt as mm takes it: the text (a mentioned file as
//! `@path`, an embedded file in a `<file>` block) and the pictures (the
//! client's image blocks, and those a person's text names by path).

use super::*;

/// The prompt's text: text blocks as they are, a file the client
/// mentions as `@path` (relative to the workspace, as typed in mm), an
/// embedded file with its text.
pub(super) fn prompt_text(blocks: &[ContentBlock], root: &std::path::Path) -> String {
    let mut parts = Vec::new();
    for b in blocks {
        match b {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(l) => parts.push(format!("@{}", mention(&l.uri, root))),
            ContentBlock::Resource(r) => {
                if let agent_client_protocol::v1::schema::EmbeddedResourceResource::TextResourceContents(t) =
                    &r.resource
                {
                    parts.push(format!(
                        "<file path=\"{}\">\n{}\n</file>",
                        mention(&t.uri, root),
                        t.text
                    ));
                }
            }
            _ => {}
        }
    }
    parts.join("\n")
}

/// The images among the prompt's blocks, as the model will get them
/// (kinds a vision API does not take are left out), and, in a person's
/// prompt (`typed`: not an agent's question), the pictures its text blocks
/// or links name by an absolute path (never an embedded file's text).
pub(super) fn prompt_images(blocks: &[ContentBlock], typed: bool) -> Vec<crate::protocol::Image> {
    let mut named: Vec<crate::protocol::Image> = Vec::new();
    if typed {
        for b in blocks {
            let words = match b {
                ContentBlock::Text(t) => t.text.clone(),
                ContentBlock::ResourceLink(l) => l.uri.clone(),
                _ => continue,
            };
            for (_, img) in crate::llm::images::typed(&words, 4) {
                if named.len() < 4 && !named.iter().any(|n| n.data == img.data) {
                    named.push(img);
                }
            }
        }
    }
    let sent = blocks.iter().filter_map(|b| match b {
        ContentBlock::Image(i)
            if matches!(
                i.mime_type.as_str(),
                "image/png" | "image/jpeg" | "image/gif" | "image/webp"
            ) =>
        {
            let name = i
                .uri
                .as_deref()
                .and_then(|u| u.rsplit('/').next())
                .unwrap_or("image")
                .to_string();
            Some(crate::protocol::Image {
                name,
                media_type: i.mime_type.clone(),
                data: i.data.clone(),
            })
        }
        _ => None,
    });
    sent.chain(named).collect()
}

/// A `file://` URI as a path relative to the workspace when it is inside
/// it (a `#L10` fragment dropped, `%20` decoded); anything else as given.
pub(super) fn mention(uri: &str, root: &std::path::Path) -> String {
    let Some(path) = uri.strip_prefix("file://") else {
        return uri.to_string();
    };
    let path = path.split('#').next().unwrap_or(path);
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    let path = String::from_utf8_lossy(&out).into_owned();
    let p = std::path::Path::new(&path);
    let canon = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    match canon.strip_prefix(root).or_else(|_| p.strip_prefix(root)) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path,
    }
}
