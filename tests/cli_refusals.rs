//! The command line's refusals that name their cause: a negative number after a space reaches
//! its option's own check (it is not taken for a flag), and a run that diverges before any
//! evaluation passed writes nothing over the file `--save` names; f16 where the GPU cannot is
//! refused with its reason.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_refused, cli, train_xor};

#[test]
fn a_negative_number_is_refused_by_its_option() {
    for option in ["--steps", "--batch", "--seed", "--eval-every"] {
        let args = ["train", "--task", "xor", option, "-1"];
        assert_refused(&args, &format!("'{option} <"));
        assert_refused(&args, "must not be negative");
    }
    for option in ["--tokens", "--top-k", "--seed"] {
        let args = ["sample", "--load", "no-such.safetensors", option, "-1"];
        assert_refused(&args, &format!("'{option} <"));
        assert_refused(&args, "must not be negative");
    }
    // A negative temperature is a number too: refused by the sampling's own check.
    let (code, _, err) = cli(&[
        "sample",
        "--load",
        "no-such.safetensors",
        "--temperature",
        "-1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("unexpected argument"), "{err}");
}

#[test]
fn a_run_that_diverges_before_its_first_evaluation_leaves_the_save_file_alone() {
    let dir = std::env::temp_dir().join(format!("webgrad-diverge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.safetensors");
    let good = good.to_str().unwrap();
    let (code, _, err) = train_xor("20", &["--save", good]);
    assert_eq!(code, 0, "{err}");
    let before = std::fs::read(good).unwrap();
    let diverged = [
        "train",
        "--task",
        "spiral",
        "--steps",
        "50",
        "--eval-every",
        "10",
    ];
    let (code, _, err) = cli(&[&diverged[..], &["--lr", "1e30", "--save", good]].concat());
    assert_ne!(code, 0, "a learning rate of 1e30 trained: {err}");
    assert!(err.contains("before its first evaluation passed"), "{err}");
    assert!(err.contains("nothing was written to"), "{err}");
    assert_eq!(
        std::fs::read(good).unwrap(),
        before,
        "the good checkpoint was overwritten"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_refused_size_names_its_cause() {
    // A batch beyond the data is refused as such, not as the memory it would take.
    let huge = [
        "train",
        "--task",
        "spiral",
        "--batch",
        "18446744073709551615",
    ];
    assert_refused(&huge, "is larger than the");
}

#[test]
fn f16_runs_where_the_gpu_offers_it_and_auto_says_what_it_chose() {
    assert_refused(
        &["train", "--task", "xor", "--precision", "bf16"],
        "precision \"bf16\" is not one of f32, f16 or auto",
    );
    // (matrix units, shader-f16)
    let offered = common::run(async {
        match common::gpu().await {
            webgrad::Device::Gpu(g) => (g.matrix_units().is_some(), g.shader_f16()),
            webgrad::Device::Cpu => (false, false),
        }
    });
    let train_in = |precision| {
        [
            "train",
            "--task",
            "xor",
            "--steps",
            "10",
            "--precision",
            precision,
        ]
    };
    let (f16, auto) = (train_in("f16"), train_in("auto"));
    let said = |args: &[&str]| {
        let (code, _, err) = cli(args);
        assert_eq!(code, 0, "{err}");
        err
    };
    match offered {
        (true, _) => {
            assert!(said(&f16).contains("Products in f16 (f16)"));
            assert!(said(&auto).contains("Products in f16 (auto)"));
        }
        (false, true) => {
            let err = said(&f16);
            assert!(
                err.contains("multiplies f16 on its f16 arithmetic"),
                "{err}"
            );
            assert!(said(&auto).contains("Products in f32 (auto)"));
        }
        (false, false) => {
            assert_refused(
                &f16,
                "offers webgrad neither f16 matrix units nor f16 arithmetic",
            );
            assert!(said(&auto).contains("Products in f32 (auto)"));
        }
    }
}
