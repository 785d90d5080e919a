//! `fetch_content(url)`: a web page as text for the model (the Go mm's
//! tool). HTTP(S) GET that honours the site's `robots.txt`, follows at
//! most five redirects, checks every hop's address (loopback, private and
//! link-local ones are refused unless the config allows them), stops at
//! a size and a time limit, decodes the page's charset to UTF-8 and turns
//! HTML into Markdown (`htmd`, without scripts, styles and navigation).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use reqwest::Url;
use serde_json::{Value, json};

use crate::llm::ToolSpec;

/// Bytes read from a page at most.
const MAX_BYTES: usize = 2 * 1024 * 1024;
/// Characters of Markdown given to the model at most.
const MAX_TEXT: usize = 12_000;
const TIMEOUT: Duration = Duration::from_secs(20);
const ROBOTS_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_REDIRECTS: usize = 5;
const AGENT: &str = concat!("mm/", env!("CARGO_PKG_VERSION"));

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: crate::toolname::ToolName::FetchContent.as_str().into(),
        description: "Fetch a web page (http or https) as text; HTML comes back as Markdown."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The page's URL"}},
            "required": ["url"],
        }),
    }
}

/// An address nobody outside this machine or its network should be made
/// to reach on the model's word.
fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_multicast()
                // 0/8 ("this network"), 100.64/10 (carrier-grade NAT),
                // 198.18/15 (benchmarking), 240/4 (reserved).
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            // An IPv4 address inside (mapped, compatible, NAT64 64:ff9b::/96).
            let embedded = v6.to_ipv4().or_else(|| {
                (s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0]).then(|| {
                    std::net::Ipv4Addr::new(
                        (s[6] >> 8) as u8,
                        s[6] as u8,
                        (s[7] >> 8) as u8,
                        s[7] as u8,
                    )
                })
            });
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || embedded.is_some_and(|v4| is_internal(IpAddr::V4(v4)))
        }
    }
}

/// The address to connect to for `url`, checked.
async fn resolve(url: &Url, allow_private: bool) -> Result<SocketAddr, String> {
    let host = url.host_str().ok_or("the URL has no host")?;
    let port = url.port_or_known_default().ok_or("the URL has no port")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let addr = *addrs.first().ok_or(format!("{host} has no address"))?;
    if !allow_private && addrs.iter().any(|a| is_internal(a.ip())) {
        return Err(format!(
            "{host} is a loopback or private address ({}); fetching it needs `fetchPrivate: true` in the config",
            addr.ip()
        ));
    }
    Ok(addr)
}

/// A client that connects to `addr` for the URL's host, and follows no
/// redirect on its own (each hop is checked here).
fn client_for(url: &Url, addr: SocketAddr, timeout: Duration) -> Result<reqwest::Client, String> {
    let mut b = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        // A proxy would resolve the name itself: the checked address
        // would not be the one reached.
        .no_proxy()
        .timeout(timeout)
        .user_agent(AGENT);
    if let Some(host) = url.host_str() {
        b = b.resolve(host.trim_start_matches('[').trim_end_matches(']'), addr);
    }
    b.build().map_err(|e| format!("no HTTP client: {e}"))
}

/// Whether the site's robots.txt lets mm fetch `url` (no file, or one
/// that cannot be read, allows it).
async fn robots_allow(url: &Url, addr: SocketAddr) -> bool {
    let Ok(robots) = url.join("/robots.txt") else {
        return true;
    };
    let Ok(client) = client_for(url, addr, ROBOTS_TIMEOUT) else {
        return true;
    };
    let Ok(resp) = client.get(robots).send().await else {
        return true;
    };
    if !resp.status().is_success() {
        return true;
    }
    let Ok(body) = resp.bytes().await else {
        return true;
    };
    match texting_robots::Robot::new("mm", &body) {
        Ok(r) => r.allowed(url.as_str()),
        Err(_) => true,
    }
}

/// The charset a Content-Type names.
fn header_charset(content_type: &str) -> Option<&'static encoding_rs::Encoding> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        (k.trim().eq_ignore_ascii_case("charset"))
            .then(|| encoding_rs::Encoding::for_label(v.trim().trim_matches('"').as_bytes()))
            .flatten()
    })
}

/// The charset an HTML page declares in its first bytes.
fn meta_charset(bytes: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(2048)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let rest = head[at..].trim_start_matches(['"', '\'']);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    encoding_rs::Encoding::for_label(&rest.as_bytes()[..end])
}

/// Text for the model from a page's bytes, or why there is none.
fn to_text(content_type: &str, bytes: &[u8]) -> Result<String, String> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let html = mime == "text/html" || mime == "application/xhtml+xml";
    let texty = html
        || mime.starts_with("text/")
        || mime.ends_with("json")
        || mime.ends_with("xml")
        || mime.is_empty();
    if !texty {
        return Err(format!("the page is not text ({mime})"));
    }
    let encoding = header_charset(content_type)
        .or_else(|| html.then(|| meta_charset(bytes)).flatten())
        .unwrap_or(encoding_rs::UTF_8);
    let (text, _, _) = encoding.decode(bytes);
    if mime.is_empty() && text.contains('\u{0}') {
        return Err("the page is not text (binary content)".into());
    }
    if !html {
        return Ok(text.into_owned());
    }
    htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "nav", "footer", "svg", "iframe", "form", "head",
        ])
        .build()
        .convert(&text)
        .map_err(|e| format!("the page's HTML could not be read: {e}"))
}

/// Fetches `args.url`. Ok: the text; Err: why not (refusals included).
pub async fn fetch(
    args: &serde_json::Map<String, Value>,
    allow_private: bool,
) -> Result<String, String> {
    let raw = args.get("url").and_then(Value::as_str).unwrap_or("").trim();
    let mut url = Url::parse(raw).map_err(|e| format!("{raw:?} is not a URL: {e}"))?;
    for _ in 0..=MAX_REDIRECTS {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("only http and https URLs, not {}", url.scheme()));
        }
        let addr = resolve(&url, allow_private).await?;
        if !robots_allow(&url, addr).await {
            return Err(format!(
                "the site's robots.txt does not allow fetching {url}"
            ));
        }
        let client = client_for(&url, addr, TIMEOUT)?;
        let mut resp = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = resp.status();
        if status.is_redirection() {
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or(format!("{url} redirected without a Location"))?;
            url = url
                .join(to)
                .map_err(|e| format!("a bad redirect ({to}): {e}"))?;
            continue;
        }
        if !status.is_success() {
            return Err(format!("{url} answered {status}"));
        }
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut bytes: Vec<u8> = Vec::new();
        let mut cut = false;
        while let Some(chunk) = resp.chunk().await.map_err(|e| format!("{url}: {e}"))? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > MAX_BYTES {
                bytes.truncate(MAX_BYTES);
                cut = true;
                break;
            }
        }
        let mut text = to_text(&content_type, &bytes)?;
        if text.chars().count() > MAX_TEXT {
            text = text.chars().take(MAX_TEXT).collect();
            cut = true;
        }
        if cut {
            text.push_str("\n\n[the page is longer; this is its beginning]");
        }
        return Ok(format!("[{url}]\n{text}"));
    }
    Err(format!("more than {MAX_REDIRECTS} redirects"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_named() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "169.254.1.1",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "::ffff:10.0.0.1",
            "0.1.2.3",
            "198.18.0.1",
            "64:ff9b::a00:1",
            "::127.0.0.1",
        ] {
            assert!(
                is_internal(ip.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))),
                "{ip}"
            );
        }
        for ip in ["93.184.216.34", "2606:4700::1111"] {
            assert!(
                !is_internal(ip.parse().unwrap_or(IpAddr::from([127, 0, 0, 1]))),
                "{ip}"
            );
        }
    }

    #[test]
    fn charsets_come_from_the_header_or_the_page() {
        let latin1 =
            b"<html><head><meta charset=\"iso-8859-1\"></head><body><p>caf\xe9</p></body></html>";
        assert_eq!(to_text("text/html", latin1).as_deref(), Ok("café"));
        assert_eq!(
            to_text("text/plain; charset=latin1", b"na\xefve").as_deref(),
            Ok("naïve")
        );
        assert!(
            to_text("image/png", b"\x89PNG")
                .unwrap_err()
                .contains("not text (image/png)")
        );
        let md = to_text(
            "text/html",
            b"<h1>Title</h1><script>x()</script><p>Body <b>bold</b></p>",
        )
        .unwrap_or_default();
        assert!(
            md.contains("# Title") && md.contains("**bold**") && !md.contains("x()"),
            "{md}"
        );
    }
}
