//! An idle pool parks instead of spinning. Alone in its own test binary, because it
//! measures the whole process's CPU time and other tests would add to it.

use kiln::jobs::ThreadPool;

#[cfg(target_os = "linux")]
#[test]
fn idle_pool_parks_instead_of_spinning() {
    fn process_cpu_ticks() -> u64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }
    let pool = ThreadPool::new(4);
    pool.parallel_for(0..1000, 1, |_, _| {});
    std::thread::sleep(std::time::Duration::from_millis(100));
    let before = process_cpu_ticks();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let used = process_cpu_ticks() - before;
    // Clock ticks are 10 ms; four spinning threads would burn ~200 ticks here.
    assert!(used <= 5, "idle pool used {used} CPU ticks in 500 ms");
    // And it wakes up again.
    let sum = std::sync::atomic::AtomicUsize::new(0);
    pool.parallel_for(0..100, 1, |r, _| {
        sum.fetch_add(r.len(), std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(sum.into_inner(), 100);
}
