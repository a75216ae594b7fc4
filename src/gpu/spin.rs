//! Waiting natively for a short piece of GPU work by polling the device rather than sleeping
//! on it: a blocked thread is woken some tens of microseconds after the GPU finishes, which
//! is most of a small step's wait (CUDA's synchronize spins for the same reason). On the H100,
//! matmul_1024 waited for went from 0.155-0.195 ms to 0.125-0.134 (docs/BENCHMARKS.md).

use futures_channel::oneshot::Receiver;
use std::time::Duration;

/// How long to poll before sleeping: long enough for the small steps whose wait it shortens,
/// short enough that a long step does not keep a core busy.
const SPIN: Duration = Duration::from_millis(1);

/// The answer, if it comes within SPIN while the device is polled without blocking (`poll`
/// runs the callbacks of finished work; false when it failed, which the blocking wait that
/// follows reports).
pub(super) fn answer_soon<T>(
    mut poll: impl FnMut() -> bool,
    receiver: &mut Receiver<T>,
) -> Option<T> {
    let start = crate::clock::now();
    while crate::clock::now() - start < SPIN {
        if !poll() {
            return None;
        }
        if let Ok(Some(answer)) = receiver.try_recv() {
            return Some(answer);
        }
        std::hint::spin_loop();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_channel::oneshot;

    #[test]
    fn the_answer_sent_by_a_poll_is_returned_at_once() {
        let (sender, mut receiver) = oneshot::channel();
        let mut sender = Some(sender);
        let mut polls = 0;
        let poll = || {
            polls += 1;
            if polls == 3 {
                sender.take().unwrap().send(7).unwrap();
            }
            true
        };
        assert_eq!(answer_soon(poll, &mut receiver), Some(7));
        assert_eq!(polls, 3);
    }

    #[test]
    fn without_an_answer_it_gives_up_after_the_spin_or_a_failed_poll() {
        let (_sender, mut receiver) = oneshot::channel::<u32>();
        let start = crate::clock::now();
        assert_eq!(answer_soon(|| true, &mut receiver), None);
        assert!(crate::clock::now() - start >= SPIN);
        let mut polls = 0;
        let failing = || {
            polls += 1;
            false
        };
        assert_eq!(answer_soon(failing, &mut receiver), None);
        assert_eq!(polls, 1);
    }
}
