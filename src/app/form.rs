//! The settings controls as values, with no page in it: read from the page
//! (`settings::from_page`), sent to the training worker, which checks them (`schema::read`) once
//! it knows the data's size, and marked back in the page.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Serialize, Deserialize, Clone, Default, Debug)]
pub struct Form {
    values: BTreeMap<String, String>,
    /// Each control checked, with what is wrong with it (None: nothing).
    pub marks: Vec<(String, Option<String>)>,
}

impl Form {
    /// A form of these controls' values.
    pub fn new(values: BTreeMap<String, String>) -> Form {
        Form {
            values,
            marks: Vec::new(),
        }
    }

    /// A control's value ("" for one the form lacks).
    pub fn value(&self, id: &str) -> String {
        self.values.get(id).cloned().unwrap_or_default()
    }

    /// Puts values in the controls, as the page would show them.
    pub fn set_all(&mut self, shown: Vec<(&'static str, String)>) {
        for (id, v) in shown {
            self.values.insert(id.to_string(), v);
        }
    }

    /// Notes what is wrong with a control (None: it is fine).
    pub fn mark(&mut self, id: &str, problem: Option<&str>) {
        self.marks
            .push((id.to_string(), problem.map(str::to_string)));
    }
}
