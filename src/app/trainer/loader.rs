//! The data a run trains on: the 2-D sets made on the spot, the digits and Shakespeare fetched
//! once from the site's data/ folder, or the user's own points or text.

use super::{scope, Trainer};
use crate::app::protocol::Report;
use crate::data::{digits_from_gzip, points, points_from_csv, Text};
use crate::train::{Task, TaskData};

impl Trainer {
    pub(super) async fn data(
        &mut self,
        task: Task,
        noise: f64,
        seed: u64,
    ) -> Result<TaskData, String> {
        let (own_points, user_text) = self
            .plan
            .as_ref()
            .map(|p| (p.own_points.clone(), p.user_text.clone()))
            .unwrap_or_default();
        if let Some(csv) = own_points.filter(|_| task.point_set().is_some()) {
            let points = points_from_csv(&csv, 0.2, seed).map(|(data, _)| TaskData::Labelled(data));
            return self.said_beside("points-file", points, "Your points cannot be used");
        }
        if let Some(set) = task.point_set() {
            return points(set, 1000, noise, 0.2, seed)
                .map(TaskData::Labelled)
                .map_err(|e| e.sentence());
        }
        if task == Task::Digits {
            if self.digits.is_none() {
                let bytes = scope::fetch("data/digits.bin.gz").await?;
                self.digits = Some(digits_from_gzip(&bytes).map_err(|e| e.sentence())?);
            }
            return Ok(TaskData::Labelled(
                self.digits.clone().expect("loaded above"),
            ));
        }
        if !user_text.trim().is_empty() {
            let text = Text::new(&user_text).map(TaskData::Text);
            return self.said_beside("user-text", text, "Your text cannot be used");
        }
        if self.shakespeare.is_none() {
            let bytes = scope::fetch("data/shakespeare.txt.gz").await?;
            self.shakespeare = Some(Text::from_gzip(&bytes).map_err(|e| e.sentence())?);
        }
        Ok(TaskData::Text(
            self.shakespeare.clone().expect("loaded above"),
        ))
    }

    /// The user's own data: why it was refused goes beside `control`, where it was given (and
    /// what was said there before goes once it is taken), and to the error line as `what: why`.
    fn said_beside(
        &self,
        control: &str,
        data: crate::Result<TaskData>,
        what: &str,
    ) -> Result<TaskData, String> {
        let why = data.as_ref().err().map(|e| e.sentence());
        self.report(Report::Marks(vec![(control.into(), why.clone())]));
        data.map_err(|_| format!("{what}: {}", why.unwrap_or_default()))
    }
}
