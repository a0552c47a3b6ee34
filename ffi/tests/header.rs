//! `include/kiln.h` must be exactly what cbindgen generates from this crate.
//! Regenerate with `KILN_BLESS=1 cargo test -p kiln-ffi --test header` or the
//! cbindgen command in `ffi/cbindgen.toml`.

use std::path::Path;

#[test]
fn header_is_fresh() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("read cbindgen.toml");
    let bindings = cbindgen::generate_with_config(crate_dir, config).expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let header_path = crate_dir.join("../include/kiln.h");
    if std::env::var_os("KILN_BLESS").is_some() {
        std::fs::write(&header_path, &generated).expect("write include/kiln.h");
        return;
    }
    let committed = std::fs::read(&header_path).expect("include/kiln.h exists");
    assert!(
        committed == generated,
        "include/kiln.h is stale: run `KILN_BLESS=1 cargo test -p kiln-ffi --test header` and commit it"
    );
}

#[test]
fn every_exported_function_is_documented_in_the_header() {
    let header = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/kiln.h")).unwrap();
    let lines: Vec<&str> = header.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let is_function = line.contains(" kiln_") && line.contains('(') && !line.starts_with([' ', '*']);
        let is_define = line.starts_with("#define KILN_") && !line.contains("KILN_H") && !line.contains("DEFINED");
        if is_function || is_define || line.starts_with("typedef struct Kiln") {
            let previous = lines[..i].iter().rev().find(|l| !l.trim().is_empty()).unwrap_or(&"");
            let documented = previous.trim_end().ends_with("*/") || previous.trim_start().starts_with("static inline");
            assert!(documented, "undocumented header item at line {}: {line}", i + 1);
        }
    }
}
