//! Tool calls as a model sends them: arguments of any shape checked
//! against every tool's schema, batches of any ids, calls written as text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm::llm::RawCall;
use mm::llm::stream::unwrap_arguments;
use mm::tools::{ToolSet, specs, validate};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let args = unwrap_arguments(text);
    let all = specs(ToolSet {
        bash: true,
        edit: true,
        write: true,
        lsp: true,
    });
    for spec in &all {
        let _ = validate(spec, &args);
    }
    let names: Vec<&str> = all.iter().map(|s| s.name.as_ref()).collect();
    let _ = mm::agent::recover::fenced_call(text, &names);
    let raw: Vec<RawCall> = text
        .split('\n')
        .take(8)
        .enumerate()
        .map(|(i, l)| RawCall {
            index: i,
            id: (!l.is_empty()).then(|| l.chars().take(8).collect()),
            name: l.chars().rev().take(10).collect(),
            arguments: l.to_string(),
        })
        .collect();
    let _ = mm::agent::batch::structural_error(&raw);
});
