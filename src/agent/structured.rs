//! The agent's side of `structuredOutput`: the `response_format` every
//! request carries, and the check of every answer against the schema
//! before anyone sees it.

use serde_json::{Value, json};

use crate::config::structured::Structured;

pub(super) struct Answers {
    /// `{type: json_schema, json_schema: {name, strict, schema}}`.
    pub response_format: Value,
    validator: jsonschema::Validator,
}

impl Answers {
    pub(super) fn new(s: &Structured) -> Option<Answers> {
        let validator = match jsonschema::validator_for(&s.schema) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(error = %e, "the compiled schema does not compile");
                return None;
            }
        };
        Some(Answers {
            response_format: json!({
                "type": "json_schema",
                "json_schema": {"name": s.name, "strict": true, "schema": s.schema},
            }),
            validator,
        })
    }

    /// Whether `answer` is JSON of the declared shape; why not, in words.
    pub(super) fn check(&self, answer: &str, truncated: bool) -> Result<(), String> {
        if truncated {
            return Err(
                "the answer was cut off by max_tokens before its JSON was complete; bound the lists in the declarations' comments, or raise sampling.max_tokens".into(),
            );
        }
        let text = unfenced(answer);
        if text.is_empty() {
            return Err("the model gave no answer".into());
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("the answer is not JSON ({e})"))?;
        if let Some(e) = self.validator.iter_errors(&value).next() {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_string() } else { at };
            return Err(format!(
                "the answer does not have the declared shape: at {at}, {e}"
            ));
        }
        Ok(())
    }
}

/// The JSON of an answer, without the code fence a server that ignores
/// `response_format` may put around it.
pub(super) fn unfenced(answer: &str) -> &str {
    let t = answer.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// A server's refusal of a structured request, named as such.
pub(super) fn refused(url: &str, status: u16, body: &str) -> String {
    let lower = body.to_lowercase();
    if lower.contains("response_format")
        || lower.contains("json_schema")
        || lower.contains("schema")
    {
        format!(
            "the server at {url} does not accept response_format (a JSON Schema for the answer); it answered {status}: {body}"
        )
    } else {
        format!("the server at {url} answered {status}: {body}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers() -> Answers {
        let s = crate::config::structured::compile(
            "type C struct {\n    Name string `json:\"name\"`\n    Capital *string `json:\"capital\"`\n}\nvar Cs = []C{}\n",
        )
        .unwrap();
        Answers::new(&s).unwrap()
    }

    #[test]
    fn answers_are_checked_against_the_declared_shape() {
        let a = answers();
        assert_eq!(a.response_format["json_schema"]["name"], "Cs");
        assert_eq!(a.response_format["json_schema"]["strict"], true);
        assert!(
            a.check(r#"[{"name":"France","capital":"Paris"}]"#, false)
                .is_ok()
        );
        assert!(
            a.check(r#"[{"name":"Atlantis","capital":null}]"#, false)
                .is_ok()
        );
        assert!(a.check("```json\n[]\n```", false).is_ok());
        let wrong = a.check(r#"[{"name":"France"}]"#, false).unwrap_err();
        assert!(
            wrong.contains("at /0") && wrong.contains("capital"),
            "{wrong}"
        );
        let extra = a
            .check(r#"[{"name":"F","capital":"P","x":1}]"#, false)
            .unwrap_err();
        assert!(extra.contains("declared shape"), "{extra}");
        assert!(
            a.check("France: Paris", false)
                .unwrap_err()
                .contains("not JSON")
        );
        assert!(
            a.check("[{", true)
                .unwrap_err()
                .contains("cut off by max_tokens")
        );
    }
}
