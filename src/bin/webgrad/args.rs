//! A small `--flag value` parser: every flag is known, every value parsed, every mistake a
//! sentence.

use std::collections::HashMap;

/// Parsed flags of one command.
pub struct Args {
    values: HashMap<String, String>,
}

impl Args {
    /// Parses `--name value` pairs, accepting only `known` names.
    pub fn parse(raw: &[String], known: &[&str]) -> Result<Args, String> {
        let mut values = HashMap::new();
        let mut it = raw.iter();
        while let Some(flag) = it.next() {
            let name = flag
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {flag:?} (flags start with --)"))?;
            if !known.contains(&name) {
                return Err(format!(
                    "unknown flag --{name}; known: {}",
                    known
                        .iter()
                        .map(|k| format!("--{k}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                ));
            }
            let value = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
            values.insert(name.to_string(), value.clone());
        }
        Ok(Args { values })
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// A value parsed as T, or None when the flag is absent.
    pub fn get<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        match self.values.get(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| format!("--{name} {v:?} is not a valid value")),
        }
    }
}
