//! Rung 1's single pass over broken JSON text.

#[derive(Default)]
struct Mends {
    prose_before: bool,
    prose_after: bool,
    single_quotes: bool,
    python: bool,
    bare_keys: bool,
    trailing_commas: usize,
    raw_controls: bool,
    open_string: bool,
    closed: usize,
    dangling_colon: bool,
}

/// One pass over the text that fixes what it meets; see the module page for the list.
pub(super) fn mend(text: &str, notes: &mut Vec<String>) -> String {
    let mut m = Mends::default();
    let chars: Vec<char> = text.chars().collect();
    let mut i = chars
        .iter()
        .position(|c| *c == '{' || *c == '[')
        .unwrap_or(0);
    m.prose_before = i > 0;
    let mut out = String::with_capacity(text.len() + 8);
    let mut stack: Vec<char> = Vec::new();
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                m.single_quotes |= c == '\'';
                i = string(&chars, i, &mut out, &mut m);
            }
            '{' | '[' => {
                stack.push(c);
                out.push(c);
                i += 1;
            }
            '}' | ']' => {
                drop_trailing_comma(&mut out, &mut m);
                let want = if c == '}' { '{' } else { '[' };
                if let Some(depth) = stack.iter().rposition(|o| *o == want) {
                    while stack.len() > depth + 1 {
                        close(&mut out, &mut stack, &mut m);
                    }
                    stack.pop();
                    out.push(c);
                }
                i += 1;
                if stack.is_empty() {
                    m.prose_after = chars[i..].iter().any(|c| !c.is_whitespace());
                    break;
                }
            }
            c if c.is_ascii_alphabetic() => {
                let end = (i..chars.len())
                    .find(|&j| !chars[j].is_ascii_alphanumeric() && chars[j] != '_')
                    .unwrap_or(chars.len());
                let word: String = chars[i..end].iter().collect();
                let next = chars[end..].iter().find(|c| !c.is_whitespace());
                if next == Some(&':') && stack.last() == Some(&'{') {
                    out.push('"');
                    out.push_str(&word);
                    out.push('"');
                    m.bare_keys = true;
                } else {
                    let json = match word.as_str() {
                        "True" => "true",
                        "False" => "false",
                        "None" => "null",
                        other => other,
                    };
                    m.python |= json != word;
                    out.push_str(json);
                }
                i = end;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    if !stack.is_empty() {
        drop_trailing_comma(&mut out, &mut m);
        if out.trim_end().ends_with(':') {
            out.push_str(" null");
            m.dangling_colon = true;
        }
        while !stack.is_empty() {
            close(&mut out, &mut stack, &mut m);
        }
    }
    report(&m, notes);
    out
}

/// Copies one string starting at `chars[start]` as a double-quoted JSON string.
fn string(chars: &[char], start: usize, out: &mut String, m: &mut Mends) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    out.push('"');
    while i < chars.len() {
        let d = chars[i];
        match d {
            '\\' if i + 1 < chars.len() => {
                let e = chars[i + 1];
                if quote == '\'' && e == '\'' {
                    out.push('\'');
                } else {
                    out.push('\\');
                    out.push(e);
                }
                i += 2;
                continue;
            }
            '\\' => {}
            d if d == quote => {
                out.push('"');
                return i + 1;
            }
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            d if (d as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", d as u32)),
            d => out.push(d),
        }
        if d.is_control() && d != '\\' {
            m.raw_controls = true;
        }
        i += 1;
    }
    m.open_string = true;
    out.push('"');
    i
}

fn drop_trailing_comma(out: &mut String, m: &mut Mends) {
    let kept = out.trim_end().len();
    if out[..kept].ends_with(',') {
        out.truncate(kept - 1);
        m.trailing_commas += 1;
    }
}

fn close(out: &mut String, stack: &mut Vec<char>, m: &mut Mends) {
    drop_trailing_comma(out, m);
    if let Some(open) = stack.pop() {
        out.push(if open == '{' { '}' } else { ']' });
        m.closed += 1;
    }
}

fn report(m: &Mends, notes: &mut Vec<String>) {
    let mut add = |yes: bool, text: String| {
        if yes {
            notes.push(text);
        }
    };
    add(
        m.prose_before,
        "text before the JSON was ignored".to_owned(),
    );
    add(
        m.single_quotes,
        "single-quoted strings were changed to double-quoted".to_owned(),
    );
    add(
        m.bare_keys,
        "unquoted property names were quoted".to_owned(),
    );
    add(
        m.python,
        "Python literals (True, False, None) were changed to JSON's".to_owned(),
    );
    add(
        m.raw_controls,
        "raw line breaks or tabs inside strings were escaped".to_owned(),
    );
    add(
        m.trailing_commas > 0,
        format!("{} trailing comma(s) were removed", m.trailing_commas),
    );
    add(
        m.open_string,
        "an unterminated string was closed".to_owned(),
    );
    add(
        m.dangling_colon,
        "a property with no value was given null".to_owned(),
    );
    add(
        m.closed > 0,
        format!(
            "{} unclosed bracket(s) were closed (the JSON was cut off or unbalanced)",
            m.closed
        ),
    );
    add(m.prose_after, "text after the JSON was ignored".to_owned());
}
