//! The data a run trains on: the 2-D sets made on the spot, the digits and Shakespeare fetched
//! once from the site's data/ folder, or the user's own text.

use super::{dom, with, Loop};
use crate::data::{digits_from_gzip, points, points_from_csv, Text};
use crate::train::{Task, TaskData};
use wasm_bindgen::JsCast;

impl Loop {
    async fn fetch(path: &str) -> Result<Vec<u8>, String> {
        let window = web_sys::window().ok_or("no window")?;
        let response: web_sys::Response =
            wasm_bindgen_futures::JsFuture::from(window.fetch_with_str(path))
                .await
                .map_err(dom::js_error)?
                .unchecked_into();
        if !response.ok() {
            return Err(format!(
                "could not load {path} (HTTP {})",
                response.status()
            ));
        }
        let buffer =
            wasm_bindgen_futures::JsFuture::from(response.array_buffer().map_err(dom::js_error)?)
                .await
                .map_err(dom::js_error)?;
        Ok(js_sys::Uint8Array::new(&buffer).to_vec())
    }

    pub(super) async fn data(
        &mut self,
        task: Task,
        noise: f64,
        seed: u64,
    ) -> Result<TaskData, String> {
        if let Some(csv) = with(|s| s.own_points.clone()).filter(|_| task.point_set().is_some()) {
            return points_from_csv(&csv, 0.2, seed)
                .map(|(data, _)| TaskData::Labelled(data))
                .map_err(|e| format!("Your points cannot be used: {}", e.sentence()));
        }
        if let Some(set) = task.point_set() {
            return points(set, 1000, noise, 0.2, seed)
                .map(TaskData::Labelled)
                .map_err(|e| e.sentence());
        }
        if task == Task::Digits {
            if self.digits.is_none() {
                self.digits = Some(
                    digits_from_gzip(&Self::fetch("data/digits.bin.gz").await?)
                        .map_err(|e| e.sentence())?,
                );
            }
            return Ok(TaskData::Labelled(
                self.digits.clone().expect("loaded above"),
            ));
        }
        let own = dom::value("user-text");
        if !own.trim().is_empty() {
            return Text::new(&own)
                .map(TaskData::Text)
                .map_err(|e| format!("Your text cannot be used: {}", e.sentence()));
        }
        if self.shakespeare.is_none() {
            self.shakespeare = Some(
                Text::from_gzip(&Self::fetch("data/shakespeare.txt.gz").await?)
                    .map_err(|e| e.sentence())?,
            );
        }
        Ok(TaskData::Text(
            self.shakespeare.clone().expect("loaded above"),
        ))
    }
}
