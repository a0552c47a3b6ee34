//! With the loader pointed at no driver, opening a GPU context fails with a clear
//! status and the CPU side keeps working. A separate test binary, because the
//! loader reads its environment once per process.

use kiln::gpu::{gpu_required, Gpu, GpuConfig, GpuError};

#[test]
fn no_driver_gives_no_device_and_cpu_features_keep_working() {
    // SAFETY (set_var): this binary has one test, so no other thread reads the
    // environment concurrently.
    std::env::set_var("VK_ICD_FILENAMES", "/nonexistent/kiln-no-driver.json");
    std::env::set_var("VK_DRIVER_FILES", "/nonexistent/kiln-no-driver.json");
    for validation in [false, true] {
        match Gpu::new(&GpuConfig { validation, ..GpuConfig::default() }) {
            Err(GpuError::NoDevice(message)) => assert!(!message.is_empty()),
            // Without a loader at all (a machine without libvulkan1) the status is NoLoader;
            // CI installs the loader, so there it must be NoDevice.
            Err(GpuError::NoLoader(message)) if !gpu_required() => eprintln!("no loader: {message}"),
            Err(GpuError::MissingFeature(message)) if validation && !gpu_required() => eprintln!("{message}"),
            Err(other) => panic!("expected NoDevice, got {other}"),
            Ok(gpu) => panic!("opened {} with no driver", gpu.info().name),
        }
    }
    // CPU features do not care.
    let blas = kiln::gpu::Blas::build(&[[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], &[[0, 1, 2]]).unwrap();
    assert_eq!(blas.triangle_count(), 1);
}
