//! With the Vulkan loader pointed at no driver, `kiln_tracer_create` answers
//! `KILN_ERROR_NO_DEVICE` with a message, and CPU calls keep working. A separate
//! test binary: the loader reads its environment once per process.

use std::ffi::CStr;

use kiln::*;

#[test]
fn no_driver_gives_no_device_and_cpu_calls_keep_working() {
    // SAFETY (set_var): this binary has one test, so no other thread reads the
    // environment concurrently.
    std::env::set_var("VK_ICD_FILENAMES", "/nonexistent/kiln-no-driver.json");
    std::env::set_var("VK_DRIVER_FILES", "/nonexistent/kiln-no-driver.json");
    std::env::remove_var("KILN_GPU_DEVICE");
    let def = kiln_default_tracer_def();
    let mut tracer = KilnTracerId::default();
    // SAFETY: valid pointers to locals.
    let status = unsafe { kiln_tracer_create(&def, &mut tracer) };
    // SAFETY: the message is a NUL-terminated per-thread string.
    let message = unsafe { CStr::from_ptr(kiln_last_error_message()) }.to_string_lossy().into_owned();
    assert_eq!(status, KILN_ERROR_NO_DEVICE, "{message}");
    assert!(message.contains("kiln_tracer_create") && message.len() > 30, "{message}");
    assert_eq!(tracer, KilnTracerId::default(), "nothing written on failure");
    assert!(!kiln_tracer_is_valid(tracer));
    // CPU features do not care.
    let mut shape = KilnShapeId::default();
    // SAFETY: valid pointer to a local.
    assert_eq!(unsafe { kiln_shape_create_box(KilnVec3 { x: 1.0, y: 1.0, z: 1.0 }, &mut shape) }, KILN_OK);
    assert_eq!(kiln_shape_destroy(shape), KILN_OK);
}
