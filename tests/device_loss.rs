//! A lost GPU device: every use of it after the loss fails with `Error::DeviceLost` (never a
//! panic or a hang), and the run goes on, on a new device, from a checkpoint taken earlier,
//! exactly as if it had never stopped. Natively the loss is made with `Gpu::destroy`, the same
//! call the browser test makes through the page.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::run;
use webgrad::train::{Checkpoint, Config, Session, Task};
use webgrad::{Device, Error, Gpu};

fn spiral(device: &Device) -> Session {
    common::spiral_session(
        device,
        &Config::defaults(Task::Spiral, None, None, 0).unwrap(),
    )
}

/// Steps `n` times and reads the last loss back.
async fn train(session: &mut Session, n: usize) -> webgrad::Result<f32> {
    for _ in 0..n {
        session.train_step()?;
    }
    session.check().await
}

#[test]
fn a_lost_device_is_reported_and_the_run_resumes_on_a_new_one() {
    run(async {
        let gpu = Gpu::new().await.expect("a GPU adapter");
        let device = Device::Gpu(gpu.clone());
        let mut session = spiral(&device);
        train(&mut session, 10).await.unwrap();
        let kept = session.save().await.unwrap();

        let mut unbroken = spiral(&common::gpu().await);
        unbroken.load(&kept).unwrap();
        let want = train(&mut unbroken, 5).await.unwrap();

        assert_eq!(gpu.lost(), None);
        gpu.destroy();
        let lost = train(&mut session, 5).await.unwrap_err();
        assert!(matches!(lost, Error::DeviceLost(_)), "{lost:?}");
        assert!(gpu.lost().is_some());
        let again = session.evaluate().await.unwrap_err();
        assert!(matches!(again, Error::DeviceLost(_)), "{again:?}");

        let fresh = Device::Gpu(Gpu::new().await.expect("a second device"));
        let mut resumed = session.resume_on(&fresh, &kept).unwrap();
        assert_eq!(resumed.step, 10);
        assert_eq!(train(&mut resumed, 5).await.unwrap(), want);
    });
}

#[test]
fn the_cli_saves_the_last_evaluation_when_its_device_is_lost() {
    let dir = std::env::temp_dir().join(format!("webgrad-lost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (best, last) = (dir.join("best.safetensors"), dir.join("last.safetensors"));
    let (code, out, err) = common::cli(&[
        "train",
        "--task",
        "xor",
        "--steps",
        "100",
        "--eval-every",
        "10",
        "--lose-device-at",
        "25",
        "--save",
        best.to_str().unwrap(),
        "--save-last",
        last.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        out.lines().count(),
        2,
        "evaluations at steps 10 and 20: {out}"
    );
    assert!(
        err.contains("the GPU device was lost (it was destroyed"),
        "{err}"
    );
    let saved = format!(
        "the weights of step 20, its last evaluation, were saved to {}",
        last.display()
    );
    assert!(err.contains(&saved), "{err}");
    assert!(err.contains(&format!("are in {}", best.display())), "{err}");
    let ck = Checkpoint::parse(&std::fs::read(&last).unwrap()).unwrap();
    assert_eq!(ck.step, 20);
    Checkpoint::parse(&std::fs::read(&best).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
