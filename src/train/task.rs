//! The tasks a run can learn, named as settings, URLs and checkpoints name them.

use crate::data::PointSet;
use serde::{Deserialize, Serialize};

/// The task names the CLI and the page accept, in the order they are listed.
pub const TASKS: [&str; 7] = [
    "spiral", "circles", "xor", "gauss", "moons", "digits", "text",
];

/// What a run learns: a 2-D point set (an MLP's), handwritten digits or text (a GPT's).
/// Serialised by its name in `TASKS`, as checkpoints written before it was a type hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    Spiral,
    Circles,
    Xor,
    Gauss,
    Moons,
    Digits,
    Text,
}

impl Task {
    /// Every task, in the order of `TASKS`.
    pub const ALL: [Task; 7] = [
        Task::Spiral,
        Task::Circles,
        Task::Xor,
        Task::Gauss,
        Task::Moons,
        Task::Digits,
        Task::Text,
    ];

    pub fn name(self) -> &'static str {
        TASKS[self as usize]
    }

    /// The task by its name in `TASKS`.
    pub fn parse(name: &str) -> Option<Task> {
        Task::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The point set of a 2-D task.
    pub fn point_set(self) -> Option<PointSet> {
        match self {
            Task::Spiral => Some(PointSet::Spiral),
            Task::Circles => Some(PointSet::Circles),
            Task::Xor => Some(PointSet::Xor),
            Task::Gauss => Some(PointSet::Gauss),
            Task::Moons => Some(PointSet::Moons),
            Task::Digits | Task::Text => None,
        }
    }
}

impl std::fmt::Display for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for task in Task::ALL {
            assert_eq!(Task::parse(task.name()), Some(task));
            let json = serde_json::to_string(&task).unwrap();
            assert_eq!(json, format!("\"{}\"", task.name()));
        }
        assert_eq!(Task::parse("mnist"), None);
    }
}
