//! The settings controls as values: read from the page, sent to the training worker, which
//! checks them (`settings::read`) once it knows the data's size, and marked back in the page.

use super::{dom, settings};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Serialize, Deserialize, Clone, Default, Debug)]
pub struct Form {
    values: BTreeMap<String, String>,
    /// Each control checked, with what is wrong with it (None: nothing).
    pub marks: Vec<(String, Option<String>)>,
}

impl Form {
    /// The settings controls as the page shows them now.
    pub fn from_page() -> Form {
        let values = settings::CONTROLS
            .iter()
            .map(|id| (id.to_string(), dom::value(id)))
            .collect();
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

/// Shows marks beside the page's controls.
pub fn show_marks(marks: &[(String, Option<String>)]) {
    for (id, problem) in marks {
        dom::mark(id, problem.as_deref());
    }
}
