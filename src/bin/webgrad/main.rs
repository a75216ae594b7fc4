//! The command-line trainer: `webgrad train`, `webgrad sample`. Errors print one line and
//! exit with status 2.

#[cfg(not(target_arch = "wasm32"))]
mod args;
#[cfg(not(target_arch = "wasm32"))]
mod bench;
#[cfg(not(target_arch = "wasm32"))]
mod commands;

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = match argv.first().map(String::as_str) {
        Some("train") => commands::train(&argv[1..]),
        Some("sample") => commands::sample(&argv[1..]),
        Some("bench") => bench::bench(&argv[1..]),
        Some("--help") | Some("-h") | Some("help") => {
            println!("{}", commands::USAGE);
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}\n{}", commands::USAGE)),
        None => Err(commands::USAGE.to_string()),
    };
    if let Err(message) = result {
        eprintln!("webgrad: {message}");
        std::process::exit(2);
    }
}

#[cfg(target_arch = "wasm32")]
fn main() {}
