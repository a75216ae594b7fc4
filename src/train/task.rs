//! The tasks a run can learn, named as settings, URLs and checkpoints name them.

use super::config::Family;
use crate::data::PointSet;

crate::setting_enum! {
    /// What a run learns: a 2-D point set (an MLP's), handwritten digits or text (a GPT's).
    /// Named by its lower-case name (`Task::VARIANTS` lists them), in serde as in strum, as
    /// checkpoints written before it was a type hold it.
    #[derive(Default)]
    pub enum Task {
        #[default]
        Spiral,
        Circles,
        Xor,
        Gauss,
        Moons,
        Digits,
        Text,
    }
}

impl Task {
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

    /// The model family the task trains unless told otherwise.
    pub fn default_family(self) -> Family {
        match self {
            Task::Digits => Family::Cnn,
            Task::Text => Family::Gpt,
            _ => Family::Mlp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{Activation, Preset};
    use crate::optim::{RuleKind, ScheduleKind};
    use serde::de::DeserializeOwned;
    use serde::Serialize;
    use std::fmt::Debug;
    use std::str::FromStr;
    use strum::VariantNames;

    /// Every name of a settings enum parses back to a value that serde writes by that name.
    fn names_agree<T>()
    where
        T: VariantNames + FromStr + AsRef<str> + Serialize + DeserializeOwned + PartialEq + Debug,
        T::Err: Debug,
    {
        for name in T::VARIANTS {
            let value: T = name.parse().unwrap();
            assert_eq!(value.as_ref(), *name);
            let json = serde_json::to_string(&value).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), value);
        }
        assert!("mnist".parse::<T>().is_err());
    }

    #[test]
    fn settings_names_match_serde() {
        names_agree::<Task>();
        names_agree::<Family>();
        names_agree::<Activation>();
        names_agree::<Preset>();
        names_agree::<RuleKind>();
        names_agree::<ScheduleKind>();
        assert_eq!(Task::VARIANTS[0], "spiral");
    }
}
