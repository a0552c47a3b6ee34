//! Typed resource handles and the cells that hold resource data.
//!
//! A [`Res<T>`] names a value owned by one frame graph. Passes borrow it through
//! their context; each cell carries an atomic borrow flag (a `RefCell` that is
//! `Sync`), so a pass that takes `&mut` twice, or reads and writes the same resource
//! at once, gets an error instead of aliased references. The compiled graph already
//! guarantees that passes running at the same time never conflict, so the flag is
//! never contended: it is a check, not a lock.

use std::any::Any;
use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicIsize, Ordering};

/// An untyped resource handle: index in its graph plus the graph's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResourceId {
    pub(crate) graph: u32,
    pub(crate) index: u32,
}

impl ResourceId {
    /// Index of the resource in its graph, in creation order.
    pub fn index(&self) -> usize {
        self.index as usize
    }
}

/// A typed handle to a resource of type `T` owned by a frame graph.
pub struct Res<T> {
    pub(crate) id: ResourceId,
    _type: PhantomData<fn() -> T>,
}

impl<T> Res<T> {
    pub(crate) fn new(id: ResourceId) -> Self {
        Res { id, _type: PhantomData }
    }

    pub fn id(&self) -> ResourceId {
        self.id
    }
}

impl<T> Clone for Res<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Res<T> {}

impl<T> fmt::Debug for Res<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Res<{}>({})", std::any::type_name::<T>(), self.id.index)
    }
}

impl<T> From<Res<T>> for ResourceId {
    fn from(res: Res<T>) -> ResourceId {
        res.id
    }
}

impl<T> From<&Res<T>> for ResourceId {
    fn from(res: &Res<T>) -> ResourceId {
        res.id
    }
}

/// Resource data behind a borrow flag: >0 readers, -1 one writer, 0 free.
pub(crate) struct ResourceCell {
    borrow: AtomicIsize,
    value: UnsafeCell<Box<dyn Any + Send + Sync>>,
}

// SAFETY: the value is Send + Sync; shared access is handed out only under the borrow
// flag (readers share `&T`, a writer is exclusive), exactly like `RefCell` + atomics.
unsafe impl Sync for ResourceCell {}

impl ResourceCell {
    pub(crate) fn new(value: Box<dyn Any + Send + Sync>) -> Self {
        ResourceCell { borrow: AtomicIsize::new(0), value: UnsafeCell::new(value) }
    }

    pub(crate) fn try_read<T: 'static>(&self) -> Option<ResRef<'_, T>> {
        let mut current = self.borrow.load(Ordering::Relaxed);
        loop {
            if current < 0 {
                return None;
            }
            match self.borrow.compare_exchange_weak(current, current + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => break,
                Err(actual) => current = actual,
            }
        }
        // SAFETY: the flag now counts us as a reader, so no writer exists.
        let value = unsafe { &*self.value.get() };
        Some(ResRef { value: value.downcast_ref().expect("resource type matches its handle"), flag: &self.borrow })
    }

    pub(crate) fn try_write<T: 'static>(&self) -> Option<ResMut<'_, T>> {
        if self.borrow.compare_exchange(0, -1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return None;
        }
        // SAFETY: the flag is -1: we are the only borrower.
        let value = unsafe { &mut *self.value.get() };
        Some(ResMut { value: value.downcast_mut().expect("resource type matches its handle"), flag: &self.borrow })
    }

    pub(crate) fn get_mut<T: 'static>(&mut self) -> &mut T {
        self.value.get_mut().downcast_mut().expect("resource type matches its handle")
    }
}

/// Shared access to a resource during a pass.
pub struct ResRef<'a, T> {
    value: &'a T,
    flag: &'a AtomicIsize,
}

impl<T> Deref for ResRef<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> Drop for ResRef<'_, T> {
    fn drop(&mut self) {
        self.flag.fetch_sub(1, Ordering::Release);
    }
}

/// Exclusive access to a resource during a pass.
pub struct ResMut<'a, T> {
    value: &'a mut T,
    flag: &'a AtomicIsize,
}

impl<T> Deref for ResMut<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> DerefMut for ResMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value
    }
}

impl<T> Drop for ResMut<'_, T> {
    fn drop(&mut self) {
        self.flag.store(0, Ordering::Release);
    }
}
