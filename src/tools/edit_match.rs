//! Finding the one block `edit_file` replaces. Small models miss the exact
//! text by a newline style, trailing spaces or indentation; each retry here
//! loosens one of those, and an ambiguous match is refused with the
//! candidate line numbers rather than patching the wrong place.

/// Where the replacement goes and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Splice {
    pub start: usize,
    pub end: usize,
    pub replacement: String,
    /// Which normalisation found it, for the result text.
    pub how: Option<&'static str>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchError {
    /// Not found; the closest block in the file, numbered, when there is one.
    NotFound { closest: Option<String> },
    /// Found more than once; 1-based line numbers of the candidates.
    Ambiguous { lines: Vec<usize> },
}

/// Finds `old` in `content` once and returns the splice that puts `new`
/// in its place.
pub fn find(content: &str, old: &str, new: &str) -> Result<Splice, MatchError> {
    if let Some(s) = exact(content, old, new, None)? {
        return Ok(widen(content, s, new));
    }
    if content.contains("\r\n") && !old.contains("\r\n") {
        let old_crlf = old.replace('\n', "\r\n");
        let new_crlf = new.replace('\n', "\r\n");
        if let Some(s) = exact(
            content,
            &old_crlf,
            &new_crlf,
            Some("matched after normalising line endings"),
        )? {
            return Ok(s);
        }
    }
    if let Some(s) = by_lines(content, old, new, Loose::TrailingSpace)? {
        return Ok(s);
    }
    if let Some(s) = by_lines(content, old, new, Loose::Indent)? {
        return Ok(s);
    }
    if (old.contains('\'') || old.contains('"'))
        && let Some(s) = by_lines(content, old, new, Loose::Quotes)?
    {
        return Ok(s);
    }
    if let Some(s) = transplant(content, old, new) {
        return Ok(s);
    }
    Err(MatchError::NotFound {
        closest: closest_block(content, old),
    })
}

/// What `new` retypes beyond `old`: the text before `old` on its line
/// (old_string begins at a definition's name and new_string with
/// `function `: spliced as it is, the line would read `function function
/// …`), and a whole definition written for a fragment of its first line
/// (whose body would otherwise stay after the new one's end). The splice
/// grows to what `new` retyped.
fn widen(content: &str, mut s: Splice, new: &str) -> Splice {
    let line_start = content[..s.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = content[s.end..]
        .find('\n')
        .map_or(content.len(), |i| s.end + i);
    if content[s.start..s.end].contains('\n') {
        return s;
    }
    let before = &content[line_start..s.start];
    let indent = before.len() - before.trim_start().len();
    let retyped = before.trim_start();
    let from_inside = !retyped.is_empty();
    if from_inside
        && retyped.chars().any(char::is_alphanumeric)
        && new.trim_start().starts_with(retyped)
    {
        s.start = if new.starts_with([' ', '\t']) {
            line_start
        } else {
            line_start + indent
        };
        s.how = Some(
            "new_string retyped the start of the line old_string is in: the line was replaced from its start; check the diff",
        );
    }
    // A definition written whole for a fragment of its first line.
    let header = content[line_start..line_end].trim_end();
    let Some(first_new) = new.lines().find(|l| !l.trim().is_empty()) else {
        return s;
    };
    let Some(name) = super::guard::definitions(first_new).into_iter().next() else {
        return s;
    };
    if super::guard::definitions(header).first() != Some(&name) {
        return s;
    }
    let whole = if header.ends_with('{') {
        // Braces balanced, and new_string ends where the definition
        // closes (a one-line definition too), while old_string leaves
        // the header's `{` (or more) in place.
        new.matches('{').count() == new.matches('}').count()
            && new.trim_end().ends_with('}')
            && (from_inside || s.end < line_start + header.len())
    } else if header.ends_with(':') && new.trim().lines().count() >= 2 {
        // `def f(x):` replaced by `def f(x):` and a line adds to the
        // body; old_string that starts or ends inside the line retypes it.
        (from_inside || s.end < line_start + header.len())
            && super::guard::block_of(new, &name).is_some_and(|b| b.trim() == new.trim())
    } else {
        false
    };
    if !whole {
        return s;
    }
    let Some(block) = super::guard::block_of(content, &name) else {
        return s;
    };
    let Some(b0) = content.find(&block) else {
        return s;
    };
    let b1 = b0 + block.trim_end().len();
    if !(b0..b1).contains(&line_start) || b1 < line_end {
        return s;
    }
    let crlf = content.contains("\r\n");
    let mut replacement = super::guard::reindent(new.trim_end(), indent);
    if crlf {
        replacement = replacement.replace("\r\n", "\n").replace('\n', "\r\n");
    }
    Splice {
        start: line_start,
        end: b1,
        replacement,
        how: Some(
            "new_string is a whole definition and old_string part of its first line: the definition was replaced whole; check the diff",
        ),
    }
}

/// The change the model meant, made where it fits: `old` was retyped
/// wrong somewhere outside the part it changes (`mean(values) / …` for
/// `total(values) / …`), but the changed part, with a few characters
/// either side, is in the file exactly once, on lines that look like
/// `old`. Only single-line `old` text and one contiguous change.
fn transplant(content: &str, old: &str, new: &str) -> Option<Splice> {
    const CONTEXT: usize = 8;
    if old.contains('\n') || new.contains('\n') {
        return None;
    }
    let o: Vec<char> = old.chars().collect();
    let n: Vec<char> = new.chars().collect();
    let mut p = 0;
    while p < o.len() && p < n.len() && o[p] == n[p] {
        p += 1;
    }
    let mut q = 0;
    while q < o.len() - p && q < n.len() - p && o[o.len() - 1 - q] == n[n.len() - 1 - q] {
        q += 1;
    }
    let left: String = o[p.saturating_sub(CONTEXT)..p].iter().collect();
    let removed: String = o[p..o.len() - q].iter().collect();
    let inserted: String = n[p..n.len() - q].iter().collect();
    let right: String = o[o.len() - q..(o.len() - q + CONTEXT).min(o.len())]
        .iter()
        .collect();
    let needle = format!("{left}{removed}{right}");
    // Enough to go by, and the edit really changes something.
    if needle.trim().chars().count() < 6 || removed == inserted {
        return None;
    }
    let hits: Vec<usize> = content.match_indices(&needle).map(|(i, _)| i).collect();
    let [at] = hits.as_slice() else {
        return None;
    };
    // The line it lands on must look like what the model meant.
    let line_start = content[..*at].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line_end = content[*at..]
        .find('\n')
        .map(|i| at + i)
        .unwrap_or(content.len());
    let line = content[line_start..line_end].trim();
    if similar::TextDiff::from_chars(old.trim(), line).ratio() < 0.6 {
        return None;
    }
    let start = at + left.len();
    Some(Splice {
        start,
        end: start + removed.len(),
        replacement: inserted,
        how: Some(
            "old_string differs from the file outside the part you change; your change was made there: check the diff",
        ),
    })
}

fn exact(
    content: &str,
    old: &str,
    new: &str,
    how: Option<&'static str>,
) -> Result<Option<Splice>, MatchError> {
    let starts: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    match starts.as_slice() {
        [] => Ok(None),
        [start] => Ok(Some(Splice {
            start: *start,
            end: start + old.len(),
            replacement: new.to_string(),
            how,
        })),
        many => Err(MatchError::Ambiguous {
            lines: many.iter().map(|s| line_of(content, *s)).collect(),
        }),
    }
}

fn line_of(content: &str, byte: usize) -> usize {
    content[..byte].matches('\n').count() + 1
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Loose {
    TrailingSpace,
    Indent,
    /// Indentation, and `'` taken for `"`: a small model retypes a line
    /// in the other quote style.
    Quotes,
}

/// Lines of `content` with their byte ranges (without the newline).
fn lines_with_ranges(content: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in content.bytes().enumerate() {
        if b == b'\n' {
            out.push((start, i));
            start = i + 1;
        }
    }
    if start < content.len() {
        out.push((start, content.len()));
    }
    out
}

fn norm(line: &str, loose: Loose) -> std::borrow::Cow<'_, str> {
    let line = line.trim_end_matches('\r').trim_end();
    match loose {
        Loose::TrailingSpace => line.into(),
        Loose::Indent => line.trim_start().into(),
        Loose::Quotes => line.trim_start().replace('\'', "\"").into(),
    }
}

fn split_block(text: &str) -> Vec<&str> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.split('\n').map(|l| l.trim_end_matches('\r')).collect()
}

fn by_lines(
    content: &str,
    old: &str,
    new: &str,
    loose: Loose,
) -> Result<Option<Splice>, MatchError> {
    let old_lines = split_block(old);
    if old_lines.iter().all(|l| l.trim().is_empty()) {
        return Ok(None);
    }
    let ranges = lines_with_ranges(content);
    let n = old_lines.len();
    if n > ranges.len() {
        return Ok(None);
    }
    let mut hits = Vec::new();
    for start in 0..=ranges.len() - n {
        let all = (0..n).all(|k| {
            let (a, b) = ranges[start + k];
            norm(&content[a..b], loose) == norm(old_lines[k], loose)
        });
        if all {
            hits.push(start);
        }
    }
    let start_line = match hits.as_slice() {
        [] => return Ok(None),
        [one] => *one,
        many => {
            return Err(MatchError::Ambiguous {
                lines: many.iter().map(|l| l + 1).collect(),
            });
        }
    };
    let (a, _) = ranges[start_line];
    let (_, line_end) = ranges[start_line + n - 1];
    let crlf = content[a..line_end].ends_with('\r');
    let mut b = if crlf { line_end - 1 } else { line_end };
    let mut replacement = match loose {
        Loose::TrailingSpace => new.strip_suffix('\n').unwrap_or(new).to_string(),
        Loose::Indent | Loose::Quotes => reindent(content, ranges[start_line], &old_lines, new),
    };
    if new.trim().is_empty() {
        // Deleting whole lines: take the line break with them.
        replacement.clear();
        b = (line_end + 1).min(content.len());
    }
    if crlf || content.contains("\r\n") {
        replacement = replacement.replace("\r\n", "\n").replace('\n', "\r\n");
    }
    Ok(Some(Splice {
        start: a,
        end: b,
        replacement,
        how: Some(match loose {
            Loose::TrailingSpace => "matched after normalising trailing whitespace",
            Loose::Indent => "matched after normalising indentation",
            Loose::Quotes => "matched after normalising quote style",
        }),
    }))
}

/// Moves `new` from the indentation the model used to the file's.
fn reindent(content: &str, first: (usize, usize), old_lines: &[&str], new: &str) -> String {
    let indent = |l: &str| -> String { l.chars().take_while(|c| c.is_whitespace()).collect() };
    let file_indent = indent(&content[first.0..first.1]);
    let old_first = old_lines
        .iter()
        .find(|l| !l.trim().is_empty())
        .copied()
        .unwrap_or("");
    let model_indent = indent(old_first);
    let new = new.strip_suffix('\n').unwrap_or(new);
    new.split('\n')
        .map(|line| {
            if line.trim().is_empty() {
                String::new()
            } else if let Some(rest) = line.strip_prefix(model_indent.as_str()) {
                format!("{file_indent}{rest}")
            } else {
                format!("{file_indent}{}", line.trim_start())
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The block of the file that looks most like `old`, numbered, to show the
/// model what is really there.
fn closest_block(content: &str, old: &str) -> Option<String> {
    let old_lines = split_block(old);
    let lines: Vec<&str> = content.lines().collect();
    if lines.is_empty() || old_lines.is_empty() {
        return None;
    }
    let n = old_lines.len().min(lines.len());
    let mut best = (0usize, 0usize);
    for start in 0..=lines.len() - n {
        let score = (0..n)
            .filter(|&k| {
                let a = lines[start + k].trim();
                let b = old_lines[k].trim();
                !a.is_empty() && (a == b || strsim::normalized_levenshtein(a, b) > 0.7)
            })
            .count();
        if score > best.1 {
            best = (start, score);
        }
    }
    if best.1 == 0 {
        return None;
    }
    let shown = n.min(12);
    Some(
        (best.0..best.0 + shown)
            .map(|i| format!("{:>6}\t{}", i + 1, lines[i]))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// Applies a splice.
pub fn apply(content: &str, s: &Splice) -> String {
    let mut out = String::with_capacity(content.len() + s.replacement.len());
    out.push_str(&content[..s.start]);
    out.push_str(&s.replacement);
    out.push_str(&content[s.end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(content: &str, old: &str, new: &str) -> Result<String, MatchError> {
        find(content, old, new).map(|s| apply(content, &s))
    }

    #[test]
    fn exact_unique_match() {
        assert_eq!(edit("a\nb\nc\n", "b", "B").unwrap(), "a\nB\nc\n");
    }

    #[test]
    fn ambiguous_matches_list_their_lines() {
        let e = edit("x = 1\ny\nx = 1\n", "x = 1", "x = 2").unwrap_err();
        assert_eq!(e, MatchError::Ambiguous { lines: vec![1, 3] });
    }

    #[test]
    fn crlf_files_match_lf_text() {
        let out = edit(
            "fn a() {\r\n    1\r\n}\r\n",
            "fn a() {\n    1\n",
            "fn a() {\n    2\n",
        )
        .unwrap();
        assert_eq!(out, "fn a() {\r\n    2\r\n}\r\n");
    }

    #[test]
    fn trailing_whitespace_is_forgiven() {
        let out = edit(
            "let a = 1;   \nlet b = 2;\n",
            "let a = 1;\nlet b = 2;",
            "let a = 3;\nlet b = 4;",
        )
        .unwrap();
        assert_eq!(out, "let a = 3;\nlet b = 4;\n");
    }

    #[test]
    fn indentation_is_forgiven_and_carried_over() {
        let content = "fn main() {\n        if x {\n            go();\n        }\n}\n";
        let old = "if x {\n    go();\n}";
        let new = "if y {\n    stop();\n}";
        let out = edit(content, old, new).unwrap();
        assert_eq!(
            out,
            "fn main() {\n        if y {\n            stop();\n        }\n}\n"
        );
    }

    #[test]
    fn a_miss_shows_the_closest_block() {
        let e = edit(
            "def add(a, b):\n    return a - b\n",
            "def add(a,b):\n    return a-b",
            "x",
        )
        .unwrap_err();
        match e {
            MatchError::NotFound { closest: Some(c) } => {
                assert!(c.contains("1\tdef add(a, b):"), "{c}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_other_quote_style_still_matches() {
        let content =
            "def load():\n    rows = [\"widget,2,6\", \"gadget,3,10\"]\n    return rows\n";
        let out = edit(
            content,
            "rows = ['widget,2,6', 'gadget,3,10']",
            "rows = ['widget,2,6', 'gadget,3,10', 'x,1,1']",
        )
        .unwrap();
        assert_eq!(
            out,
            "def load():\n    rows = ['widget,2,6', 'gadget,3,10', 'x,1,1']\n    return rows\n"
        );
    }

    #[test]
    fn a_change_is_made_where_the_rest_of_old_string_was_retyped_wrong() {
        let content = "def mean(values):\n    if not values:\n        return 0.0\n    return total(values) / (len(values) - 1)\n";
        let out = edit(
            content,
            "mean(values) / (len(values) - 1)",
            "mean(values) / (len(values))",
        )
        .unwrap();
        assert!(
            out.ends_with("    return total(values) / (len(values))\n"),
            "{out}"
        );
        // Where the changed part is not unique, or looks nothing like
        // old_string, nothing is guessed.
        let twice = "a = f(x - 1)\nb = g(x - 1)\n";
        assert!(edit(twice, "h(x - 1)", "h(x)").is_err());
        assert!(edit(content, "completely different (len(values) - 1)", "x").is_err());
    }

    #[test]
    fn a_definition_retyped_whole_for_part_of_its_first_line_replaces_it() {
        let js = "const A = 1;\n\nfunction parseQuery(qs) {\n  throw new Error('todo');\n}\n\nmodule.exports = { parseQuery };\n";
        let out = edit(
            js,
            "parseQuery(qs) {",
            "function parseQuery(qs) {\n  return { qs };\n}",
        )
        .unwrap();
        assert_eq!(
            out,
            "const A = 1;\n\nfunction parseQuery(qs) {\n  return { qs };\n}\n\nmodule.exports = { parseQuery };\n"
        );
        let py =
            "class T:\n    def f(self, x):\n        pass\n\n    def g(self):\n        return 1\n";
        let out = edit(py, "f(self, x):", "def f(self, x):\n    return x * 2\n").unwrap();
        assert_eq!(
            out,
            "class T:\n    def f(self, x):\n        return x * 2\n\n    def g(self):\n        return 1\n"
        );
        // A one-line definition for the header without its `{`.
        let out = edit(
            js,
            "function parseQuery(qs)",
            "function parseQuery(qs) { return { qs }; }",
        )
        .unwrap();
        assert_eq!(
            out,
            "const A = 1;\n\nfunction parseQuery(qs) { return { qs }; }\n\nmodule.exports = { parseQuery };\n"
        );
        // The whole first line as old_string adds to the body.
        let out = edit(
            py,
            "    def f(self, x):",
            "    def f(self, x):\n        x += 1",
        )
        .unwrap();
        assert!(out.contains("x += 1\n        pass\n"), "{out}");
    }

    #[test]
    fn the_start_of_the_line_retyped_is_not_doubled() {
        assert_eq!(
            edit(
                "a = 1\ntotal = total + 1\n",
                "total + 1",
                "total = total + 2"
            )
            .unwrap(),
            "a = 1\ntotal = total + 2\n"
        );
        // A new_string that does not retype it keeps it.
        assert_eq!(
            edit("total = total + 1\n", "total + 1", "count + 1").unwrap(),
            "total = count + 1\n"
        );
    }

    #[test]
    fn deleting_a_block_is_possible() {
        assert_eq!(edit("a\nb\nc\n", "b\n", "").unwrap(), "a\nc\n");
    }
}
