//! Which backend a run trains on. A GPU step has a fixed cost (recording, submitting, a round
//! trip to read the loss) that a small model's work does not pay back: in Chrome on
//! SwiftShader the spiral trained at ~1,560 steps/s on the CPU backend and ~280 on WebGPU. So
//! for a model small enough that the CPU could win, a few steps are timed on each and the
//! faster trains; a larger model goes straight to the GPU. The user can force either.

use super::Session;
use crate::{Device, Error, Result};

crate::setting_enum! {
    /// The backend the user asks for: `auto` times both for small models.
    #[derive(Default)]
    pub enum Backend {
        #[default]
        Auto,
        Gpu,
        Cpu,
    }
}

/// Parameters times items per step (multiply-adds of a dense layer's forward) above which
/// the CPU backend is not timed: its steps would take tens of milliseconds, far slower than
/// any GPU, and the trial itself would be slow. The spiral's default MLP is about 1.5e5 and
/// timed; the digits' default CNN, about 3.3e6 (and more, since its convolutions reuse each
/// weight across the image), is not.
pub const CPU_COULD_WIN: usize = 1_000_000;

/// Wall time spent timing each backend, after its untimed first steps.
const TRIAL_MS: f64 = 150.0;
/// Steps recorded between waits while timing: the playground's loop records up to 50 before
/// it reads the loss back, so the GPU's round trip is shared by many steps there too.
const STEPS_PER_WAIT: u32 = 20;

/// Why a run trains where it does.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// The user chose the backend.
    Chosen,
    /// The user chose the GPU, but there is none.
    NoGpuForChoice,
    /// There is no GPU: the CPU backend trains.
    NoGpu,
    /// Too large for the CPU to win: not timed there.
    Large,
    /// Both were timed: steps per second on each.
    Timed { gpu: f32, cpu: f32 },
}

/// Where a run trains, and why.
pub struct Route {
    pub device: Device,
    pub reason: Reason,
}

impl Route {
    pub fn on_cpu(&self) -> bool {
        !self.device.is_gpu()
    }

    /// What the page says of the choice, when there is something to say.
    pub fn sentence(&self) -> Option<String> {
        match &self.reason {
            Reason::Timed { gpu, cpu } if self.on_cpu() => Some(format!(
                "Training on the CPU: faster for this small model ({cpu:.0} steps a second against {gpu:.0} on the GPU). Choose a backend to override."
            )),
            Reason::Timed { gpu, cpu } => Some(format!(
                "Training on the GPU: faster for this model ({gpu:.0} steps a second against {cpu:.0} on the CPU)."
            )),
            Reason::NoGpuForChoice => Some(
                "This browser offers no WebGPU adapter, so the CPU backend trains instead of the GPU.".into(),
            ),
            Reason::Chosen if self.on_cpu() => Some("Training on the CPU backend, as chosen.".into()),
            Reason::Chosen | Reason::NoGpu | Reason::Large => None,
        }
    }
}

/// A session built on the backend `choice` asks for: with `auto` and a GPU, a small model is
/// timed on both (`build` makes a fresh session on a device; `now_ms` reads a clock in
/// milliseconds) and the faster one returned, built afresh so that no step was taken.
pub async fn route(
    choice: Backend,
    gpu: &Device,
    mut build: impl FnMut(&Device) -> Result<Session>,
    mut now_ms: impl FnMut() -> f64,
) -> Result<(Session, Route)> {
    let (device, reason) = match (choice, gpu.is_gpu()) {
        (Backend::Cpu, _) => (Device::Cpu, Reason::Chosen),
        (Backend::Gpu, true) => (gpu.clone(), Reason::Chosen),
        (Backend::Gpu, false) => (Device::Cpu, Reason::NoGpuForChoice),
        (Backend::Auto, false) => (Device::Cpu, Reason::NoGpu),
        (Backend::Auto, true) => {
            let mut on_gpu = build(gpu)?;
            if work_per_step(&on_gpu) > CPU_COULD_WIN {
                return Ok((
                    on_gpu,
                    Route {
                        device: gpu.clone(),
                        reason: Reason::Large,
                    },
                ));
            }
            let gpu_rate = trial(steps_per_second(&mut on_gpu, &mut now_ms).await)?;
            drop(on_gpu);
            let cpu_rate = trial(steps_per_second(&mut build(&Device::Cpu)?, &mut now_ms).await)?;
            let device = if cpu_rate > gpu_rate {
                Device::Cpu
            } else {
                gpu.clone()
            };
            (
                device,
                Reason::Timed {
                    gpu: gpu_rate,
                    cpu: cpu_rate,
                },
            )
        }
    };
    Ok((build(&device)?, Route { device, reason }))
}

/// A trial's rate, 0 when its steps failed: settings that diverge within the trial (a huge
/// learning rate) or a backend that cannot run the model lose the race, and training shows
/// the failure as it would without routing. A lost device is passed on, for the caller to
/// replace.
fn trial(rate: Result<f32>) -> Result<f32> {
    match rate {
        Err(e @ Error::DeviceLost(_)) => Err(e),
        Err(_) => Ok(0.0),
        Ok(r) => Ok(r),
    }
}

/// A step's work as weights times items (see `CPU_COULD_WIN`).
fn work_per_step(session: &Session) -> usize {
    session.parameter_count() * session.items_per_step()
}

/// Steps per second as the training loop sees them: two untimed steps (they build the GPU's
/// pipelines and fill its buffer pool), then steps `STEPS_PER_WAIT` at a time, each group
/// waited for, until `TRIAL_MS` have passed.
async fn steps_per_second(session: &mut Session, now_ms: &mut impl FnMut() -> f64) -> Result<f32> {
    for _ in 0..2 {
        session.train_step()?;
    }
    session.check().await?;
    let (start, mut steps) = (now_ms(), 0);
    loop {
        for _ in 0..STEPS_PER_WAIT {
            session.train_step()?;
        }
        session.check().await?;
        steps += STEPS_PER_WAIT;
        let took = now_ms() - start;
        if took >= TRIAL_MS {
            return Ok(steps as f32 / (took / 1000.0) as f32);
        }
    }
}
