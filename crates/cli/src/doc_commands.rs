//! The command lines the README and docs/ show, parsed by the CLI's own parser: a flag
//! renamed or removed in the code fails this test until the docs say the same.

use std::path::{Path, PathBuf};

/// Every `privset ...` command line in the fenced code blocks of `file` (backslash
/// continuations joined), with its line number. Synopses (`[--flag]`, `a|b`, `...`) and
/// lines with shell substitutions are left out: they are not commands one can run.
fn command_lines(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let (mut out, mut fenced, mut open) = (Vec::new(), false, None::<(usize, String)>);
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            continue;
        }
        let (start, body) = match open.take() {
            Some((start, so_far)) => (start, format!("{so_far} {t}")),
            None if t.starts_with("privset ") => (i + 1, t.to_string()),
            None => continue,
        };
        match body.strip_suffix('\\') {
            Some(more) => open = Some((start, more.trim_end().to_string())),
            None => out.push((start, body)),
        }
    }
    out.retain(|(_, c)| {
        !["[", "|", "...", "$(", "`", "<"]
            .iter()
            .any(|s| c.contains(s))
    });
    out
}

/// Splits a shell command line into words: whitespace outside quotes separates, single
/// and double quotes group; a comment, redirection or `&` ends the command.
fn words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, '#' | '>' | '&') if !any => break,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (None, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files
}

#[test]
fn every_command_line_in_the_docs_parses() {
    use clap::Parser;
    let subcommands: Vec<String> = <crate::Cli as clap::CommandFactory>::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    // A line is a command when a flag or a subcommand follows `privset`; otherwise it is
    // output shown in a code block (a version line, a table row, a log line `privset upsi
    // server: ...`).
    let is_command = |w: &[String]| {
        let logged = w.iter().take(3).any(|word| word.ends_with(':'));
        !logged
            && w.get(1)
                .is_some_and(|second| second.starts_with('-') || subcommands.contains(second))
    };
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in doc_files() {
        for (line, command) in command_lines(&file) {
            let w = words(&command);
            if !is_command(&w) {
                continue;
            }
            checked += 1;
            if let Err(e) = crate::Cli::try_parse_from(w) {
                if matches!(
                    e.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                ) {
                    continue;
                }
                let first = e.to_string().lines().next().unwrap_or_default().to_string();
                wrong.push(format!("{}:{line}: {command}\n    {first}", file.display()));
            }
        }
    }
    assert!(
        checked > 20,
        "found only {checked} command lines: is the docs folder there?"
    );
    assert!(
        wrong.is_empty(),
        "command lines the CLI refuses:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn words_split_like_a_shell() {
    assert_eq!(
        words(r#"privset psi --input "my file.csv" --id-column 'a b' # note"#),
        [
            "privset",
            "psi",
            "--input",
            "my file.csv",
            "--id-column",
            "a b"
        ]
    );
    assert_eq!(words("privset demo > out.txt"), ["privset", "demo"]);
}
