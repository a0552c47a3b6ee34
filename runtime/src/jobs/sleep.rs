//! Parking idle workers without losing wake-ups.
//!
//! Each worker (background threads and the guest slot) has a bit in a mask and a
//! `crossbeam_utils` `Unparker`. The protocol is Dekker's, on `SeqCst` fences:
//!
//! ```text
//!  worker going idle                      thread publishing work
//!  -----------------                      ----------------------
//!  set my bit in `sleeping`               push job (deque / injector)
//!  fence(SeqCst)                          fence(SeqCst)
//!  re-check queues, latch, terminate      read `sleeping`; claim one bit;
//!  nothing? park()                        unpark its owner
//!  clear my bit
//! ```
//!
//! At least one side sees the other's write, so a worker never sleeps while a job it
//! could run sits in a queue. `Parker` keeps a token, so an unpark that arrives just
//! before `park` makes `park` return at once. Spurious wake-ups only cost a re-check.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use crossbeam_utils::sync::Unparker;

pub(crate) struct Sleep {
    sleeping: Box<[AtomicU64]>,
    unparkers: Box<[Unparker]>,
}

impl Sleep {
    pub(crate) fn new(unparkers: Vec<Unparker>) -> Self {
        let words = unparkers.len().div_ceil(64);
        Sleep { sleeping: (0..words).map(|_| AtomicU64::new(0)).collect(), unparkers: unparkers.into_boxed_slice() }
    }

    /// Marks worker `index` as about to park. Call `has_work`-style checks after this.
    pub(crate) fn announce(&self, index: usize) {
        self.sleeping[index / 64].fetch_or(1 << (index % 64), Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Clears worker `index`'s bit (it woke up or found work before parking).
    pub(crate) fn retract(&self, index: usize) {
        self.sleeping[index / 64].fetch_and(!(1 << (index % 64)), Ordering::SeqCst);
    }

    /// Wakes one sleeping worker, if any: call after publishing a job.
    pub(crate) fn wake_one(&self) {
        fence(Ordering::SeqCst);
        for (word_index, word) in self.sleeping.iter().enumerate() {
            let mut bits = word.load(Ordering::Relaxed);
            while bits != 0 {
                let bit = bits & bits.wrapping_neg();
                let previous = word.fetch_and(!bit, Ordering::SeqCst);
                if previous & bit != 0 {
                    let index = word_index * 64 + bit.trailing_zeros() as usize;
                    self.unparkers[index].unpark();
                    return;
                }
                bits = previous & !bit;
            }
        }
    }

    /// Wakes worker `index` (its latch was set).
    pub(crate) fn wake(&self, index: usize) {
        self.retract(index);
        self.unparkers[index].unpark();
    }

    /// Wakes everybody (shutdown).
    pub(crate) fn wake_all(&self) {
        for unparker in self.unparkers.iter() {
            unparker.unpark();
        }
    }
}
