//! The `ipoib` command.

fn main() {
    eprintln!("ipoib: no command yet");
    std::process::exit(2);
}
