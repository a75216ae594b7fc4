//! A learning rate too high for the model: the loss grows without becoming NaN (which the
//! session's guard catches), and the page says so beside the control to change.

use super::Trainer;
use crate::app::protocol::Report;

impl Trainer {
    /// Says beside the learning rate when the validation loss ran far above its best (and
    /// takes it back once it returns): the likely cause, where the user can change it.
    pub(super) fn say_if_runaway(&mut self, loss: f32) {
        let runaway = self.best.runaway(loss);
        if runaway.is_some() == self.runaway_said {
            return;
        }
        self.runaway_said = runaway.is_some();
        let why = runaway.map(|best| {
            format!("The validation loss ran away to {loss:.3e} from its best, {best:.3}: this learning rate is likely too high for the model.")
        });
        self.report(Report::Marks(vec![("lr".into(), why)]));
    }
}
