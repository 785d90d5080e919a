//! The path jail for the file tools and the credential gate.
//!
//! A path is resolved against the workspace root lexically first (`..`
//! that climbs out fails), then every existing component is checked on
//! disk: a symlink anywhere on the way must resolve inside the root, and a
//! dangling one is refused because writing through it would create a file
//! wherever it points.

use std::path::{Component, Path, PathBuf};

/// A path the file tools may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute path inside the root (symlinks not resolved).
    pub abs: PathBuf,
    /// Relative to the root, `/`-separated, for messages and receipts.
    pub rel: String,
}

/// Resolves `input` inside `root` (which must be canonical).
pub fn resolve(root: &Path, input: &str) -> Result<Resolved, String> {
    let input = input.trim();
    if input.is_empty() {
        return Err("empty path".into());
    }
    if input.contains('\0') {
        return Err("path contains a NUL byte".into());
    }
    let given = Path::new(input);
    let mut parts: Vec<String> = Vec::new();
    let rel_input: PathBuf = if given.is_absolute() {
        match given.strip_prefix(root) {
            Ok(rest) => rest.to_path_buf(),
            Err(_) => {
                return Err(format!(
                    "{input} is outside the workspace ({})",
                    root.display()
                ));
            }
        }
    } else {
        given.to_path_buf()
    };
    for comp in rel_input.components() {
        match comp {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(format!("{input} leaves the workspace"));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("{input} is outside the workspace"));
            }
        }
    }
    let mut abs = root.to_path_buf();
    for part in &parts {
        abs.push(part);
        match std::fs::symlink_metadata(&abs) {
            Err(_) => break,
            Ok(meta) if meta.file_type().is_symlink() => match std::fs::canonicalize(&abs) {
                Ok(target) if target.starts_with(root) => {}
                Ok(target) => {
                    return Err(format!(
                        "{input} goes through a symlink that leaves the workspace (to {})",
                        target.display()
                    ));
                }
                Err(_) => {
                    return Err(format!("{input} goes through a dangling symlink"));
                }
            },
            Ok(_) => {}
        }
    }
    let abs = parts.iter().fold(root.to_path_buf(), |p, c| p.join(c));
    Ok(Resolved {
        rel: if parts.is_empty() {
            ".".into()
        } else {
            parts.join("/")
        },
        abs,
    })
}

/// Credential-shaped paths the file tools refuse everywhere.
pub fn credential_reason(rel: &str) -> Option<String> {
    let components: Vec<&str> = rel.split('/').collect();
    for dir in &components[..components.len().saturating_sub(1)] {
        if matches!(
            *dir,
            ".ssh" | ".aws" | ".gnupg" | ".kube" | ".docker" | ".azure" | ".gcloud"
        ) {
            return Some(format!("{rel} is inside {dir}/, which holds credentials"));
        }
    }
    let name = components.last().copied().unwrap_or("");
    let lower = name.to_ascii_lowercase();
    let credential = lower.starts_with(".env")
        || lower.starts_with("id_")
        || [".pem", ".key", ".p12", ".pfx", ".keystore", ".jks"]
            .iter()
            .any(|ext| lower.ends_with(ext))
        || matches!(
            lower.as_str(),
            ".netrc" | ".git-credentials" | ".npmrc" | ".pypirc" | "credentials" | ".htpasswd"
        );
    credential.then(|| format!("{rel} looks like a credential file"))
}

/// Parts of the workspace that belong to mm or git, not to the model.
pub fn reserved_reason(rel: &str, write: bool) -> Option<String> {
    let first = rel.split('/').next().unwrap_or("");
    if rel.starts_with(".mm/sessions") {
        return Some("the session logs under .mm/sessions are off limits".into());
    }
    if write && (first == ".git" || first == ".mm") {
        return Some(format!("{first}/ is not written by the file tools"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let canon = std::fs::canonicalize(dir.path()).unwrap();
        (dir, canon)
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let (_d, root) = root();
        assert_eq!(resolve(&root, "a/b.rs").unwrap().rel, "a/b.rs");
        assert_eq!(resolve(&root, "./a/../b.rs").unwrap().rel, "b.rs");
        let abs = root.join("x.txt");
        assert_eq!(resolve(&root, abs.to_str().unwrap()).unwrap().rel, "x.txt");
        assert_eq!(resolve(&root, ".").unwrap().rel, ".");
    }

    #[test]
    fn climbing_out_fails() {
        let (_d, root) = root();
        for bad in ["../x", "a/../../x", "/etc/passwd", "/", "..", ""] {
            assert!(resolve(&root, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn symlinks_that_leave_fail_and_those_inside_pass() {
        let (_d, root) = root();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("f"), root.join("file-out")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", root.join("dangling")).unwrap();
        std::fs::create_dir(root.join("in")).unwrap();
        std::os::unix::fs::symlink(root.join("in"), root.join("alias")).unwrap();
        assert!(resolve(&root, "out/secret").is_err());
        assert!(resolve(&root, "out").is_err());
        assert!(resolve(&root, "file-out").is_err());
        assert!(resolve(&root, "dangling").is_err());
        assert!(resolve(&root, "alias/ok.txt").is_ok());
    }

    #[test]
    fn credential_shapes_are_caught() {
        for bad in [
            ".env",
            ".env.local",
            "config/.env.production",
            "server.pem",
            "keys/tls.key",
            "id_rsa",
            ".ssh/config",
            "home/.aws/credentials",
            ".netrc",
            ".git-credentials",
        ] {
            assert!(credential_reason(bad).is_some(), "{bad}");
        }
        for fine in ["src/env.rs", "environment.md", "keyboard.rs", "README.md"] {
            assert!(credential_reason(fine).is_none(), "{fine}");
        }
    }

    #[test]
    fn mm_and_git_internals_are_reserved() {
        assert!(reserved_reason(".mm/sessions/x.jsonl", false).is_some());
        assert!(reserved_reason(".git/config", true).is_some());
        assert!(reserved_reason(".git/config", false).is_none());
        assert!(reserved_reason("src/main.rs", true).is_none());
    }
}
