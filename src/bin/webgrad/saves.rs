//! Where a run's checkpoints go (`--save`, `--save-last`), checked before anything trains, and
//! what is written when a run ends early: a diverged run's last good weights, and the last
//! evaluation's checkpoint of a run whose GPU device was lost.

use super::destination::Destination;
use webgrad::train::Session;

/// Why a run stopped early: divergence leaves weights worth saving on the device, a lost device
/// leaves only what was read back before, other failures may leave nothing.
pub enum Failure {
    Diverged(String),
    DeviceLost(String),
    Other(String),
}

impl From<webgrad::Error> for Failure {
    fn from(e: webgrad::Error) -> Failure {
        match e {
            webgrad::Error::Diverged { .. } => Failure::Diverged(e.to_string()),
            webgrad::Error::DeviceLost(_) => Failure::DeviceLost(e.to_string()),
            e => Failure::Other(e.to_string()),
        }
    }
}

impl From<String> for Failure {
    fn from(why: String) -> Failure {
        Failure::Other(why)
    }
}

/// The places `--save` and `--save-last` name, and with `--save-last` the checkpoint of the
/// latest evaluation, kept in memory: a lost device's weights can no longer be read.
pub struct Saves {
    best: Option<Destination>,
    last: Option<Destination>,
    latest: Option<(u64, Vec<u8>)>,
    /// The step whose weights `--save` holds, once written.
    best_written: Option<u64>,
    /// Whether an evaluation passed: before one, the run has no weights worth keeping (a run
    /// that diverges then holds only its starting weights).
    evaluated: bool,
}

/// The session's checkpoint as bytes.
fn checkpoint(session: &Session) -> Result<Vec<u8>, Failure> {
    Ok(pollster::block_on(session.save())?)
}

impl Saves {
    /// Checks both places before anything is trained.
    pub fn check(best: Option<&str>, last: Option<&str>) -> Result<Saves, String> {
        let check = |p: Option<&str>| p.map(Destination::check).transpose();
        Ok(Saves {
            best: check(best)?,
            last: check(last)?,
            latest: None,
            best_written: None,
            evaluated: false,
        })
    }

    /// At an evaluation: writes the best weights so far to `--save` when `is_best`, and keeps
    /// this checkpoint in memory when `--save-last` will want it.
    pub fn at_evaluation(&mut self, session: &Session, is_best: bool) -> Result<(), Failure> {
        self.evaluated = true;
        let best = self.best.as_ref().filter(|_| is_best);
        if best.is_none() && self.last.is_none() {
            return Ok(());
        }
        let bytes = checkpoint(session)?;
        if let Some(to) = best {
            to.write(&bytes)?;
            self.best_written = Some(session.step);
        }
        if self.last.is_some() {
            self.latest = Some((session.step, bytes));
        }
        Ok(())
    }

    /// At the end of a run: the last weights to `--save-last` (the run ends on an evaluation,
    /// whose checkpoint is kept already).
    pub fn at_end(&self, session: &Session) -> Result<(), Failure> {
        let Some(to) = &self.last else { return Ok(()) };
        match &self.latest {
            Some((step, bytes)) if *step == session.step => to.write(bytes)?,
            _ => to.write(&checkpoint(session)?)?,
        }
        Ok(())
    }

    /// The sentence for a run that failed, after writing what can still be saved.
    pub fn explain(&self, session: &Session, failure: Failure) -> String {
        match failure {
            Failure::Diverged(why) => self.rescue(session, why),
            Failure::DeviceLost(why) => self.after_device_loss(why),
            Failure::Other(why) => why,
        }
    }

    /// After a diverged run, whose session holds the last good weights again: writes them
    /// where the user asked for the last weights, and where `--save` has nothing yet.
    fn rescue(&self, session: &Session, why: String) -> String {
        if !self.evaluated {
            let kept: Vec<&str> = [&self.best, &self.last]
                .into_iter()
                .flatten()
                .map(|d| d.shown())
                .collect();
            return match kept.as_slice() {
                [] => format!("{why} before its first evaluation passed"),
                k => format!(
                    "{why} before its first evaluation passed, so no weights were worth saving and nothing was written to {}",
                    k.join(" and ")
                ),
            };
        }
        let mut places = vec![&self.last];
        if self.best_written.is_none() {
            places.push(&self.best);
        }
        let Ok(bytes) = checkpoint(session) else {
            return why;
        };
        let written: Vec<&str> = places
            .into_iter()
            .flatten()
            .filter_map(|d| d.write(&bytes).ok().map(|_| d.shown()))
            .collect();
        match written.as_slice() {
            [] => why,
            w => format!(
                "{why}; the last good weights, of step {}, were saved to {}",
                session.step,
                w.join(" and ")
            ),
        }
    }

    /// After the device was lost: the latest evaluation's checkpoint goes to `--save-last`, and
    /// the sentence says where the weights that survived are.
    fn after_device_loss(&self, why: String) -> String {
        let mut kept = Vec::new();
        if let (Some(to), Some((step, bytes))) = (&self.last, &self.latest) {
            match to.write(bytes) {
                Ok(()) => kept.push(format!(
                    "the weights of step {step}, its last evaluation, were saved to {}",
                    to.shown()
                )),
                Err(e) => kept.push(format!(
                    "the last evaluation's weights could not be saved: {e}"
                )),
            }
        }
        if let (Some(to), Some(step)) = (&self.best, self.best_written) {
            kept.push(format!(
                "the best weights, of step {step}, are in {}",
                to.shown()
            ));
        }
        let asked = self.best.is_some() || self.last.is_some();
        match (kept.is_empty(), asked) {
            (false, _) => format!("{why}; {}", kept.join(", and ")),
            (true, true) => format!("{why} before its first evaluation, so nothing was saved"),
            (true, false) => format!("{why}; --save keeps the best weights as a run goes"),
        }
    }
}
