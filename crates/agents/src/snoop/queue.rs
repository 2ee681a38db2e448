//! A double-ended queue that keeps a lone element inline, for a connection's cache of unacknowledged
//! segments: a connection with at most one segment in flight (most of a base station's many mostly idle
//! mobiles) keeps it in its own state, on cache lines the packet reads anyway, instead of in a separate
//! allocation that costs one more dependent cache miss per packet (docs/src/dev/performance.md, "Snoop's cost
//! per packet").

use std::collections::VecDeque;

/// A lone element inline; two or more in a `VecDeque` (allocated the first time), until the queue empties
/// again. Invariant: `head` and `rest` never both hold something, so a pop never shifts an element from one
/// to the other; an element moves only when a second one joins a lone one.
#[derive(Debug, Clone)]
pub(super) struct HeadInline<T> {
    head: Option<T>,
    rest: VecDeque<T>,
}

impl<T> Default for HeadInline<T> {
    fn default() -> Self {
        HeadInline { head: None, rest: VecDeque::new() }
    }
}

impl<T> HeadInline<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.len()
    }

    pub fn is_empty(&self) -> bool {
        self.head.is_none() && self.rest.is_empty()
    }

    pub fn front(&self) -> Option<&T> {
        self.head.as_ref().or_else(|| self.rest.front())
    }

    pub fn back(&self) -> Option<&T> {
        self.head.as_ref().or_else(|| self.rest.back())
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        match &self.head {
            Some(h) => (i == 0).then_some(h),
            None => self.rest.get(i),
        }
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        match &mut self.head {
            Some(h) => (i == 0).then_some(h),
            None => self.rest.get_mut(i),
        }
    }

    /// Moves a lone inline element into `rest`, before a second one joins it.
    fn spill(&mut self) {
        if let Some(h) = self.head.take() {
            self.rest.push_back(h);
        }
    }

    #[cfg(test)]
    pub fn push_back(&mut self, x: T) {
        let at = self.len();
        self.insert(at, x);
    }

    pub fn pop_front(&mut self) -> Option<T> {
        self.head.take().or_else(|| self.rest.pop_front())
    }

    pub fn pop_back(&mut self) -> Option<T> {
        self.head.take().or_else(|| self.rest.pop_back())
    }

    /// Inserts `x` at position `i`, shifting the elements from `i` on back. Panics if `i > len()`, as
    /// `VecDeque::insert` does.
    pub fn insert(&mut self, i: usize, x: T) {
        if self.is_empty() && i == 0 {
            self.head = Some(x);
        } else {
            self.spill();
            if i == self.rest.len() {
                // In-order data, nearly every insert: `VecDeque::insert` would take its general path.
                self.rest.push_back(x);
            } else {
                self.rest.insert(i, x);
            }
        }
    }

    /// Removes and returns the element at `i`, `None` if there is none.
    pub fn remove(&mut self, i: usize) -> Option<T> {
        match i {
            0 if self.head.is_some() => self.head.take(),
            _ => self.rest.remove(i),
        }
    }

    /// The index of the first element for which `pred` is false, the queue being partitioned by it (all
    /// true, then all false), as `VecDeque::partition_point`.
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        match &self.head {
            Some(h) => usize::from(pred(h)),
            None => self.rest.partition_point(pred),
        }
    }

    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.head.iter().chain(self.rest.iter())
    }
}

impl<T> std::ops::Index<usize> for HeadInline<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        self.get(i).expect("queue index in range")
    }
}

impl<T> std::ops::IndexMut<usize> for HeadInline<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.get_mut(i).expect("queue index in range")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        PushBack(u32),
        PopFront,
        PopBack,
        Insert(usize, u32),
        Remove(usize),
        GetMut(usize, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => any::<u32>().prop_map(Op::PushBack),
            2 => Just(Op::PopFront),
            1 => Just(Op::PopBack),
            2 => (any::<usize>(), any::<u32>()).prop_map(|(i, x)| Op::Insert(i, x)),
            2 => any::<usize>().prop_map(Op::Remove),
            1 => (any::<usize>(), any::<u32>()).prop_map(|(i, x)| Op::GetMut(i, x)),
        ]
    }

    proptest! {
        /// Every operation does exactly what it does on a `VecDeque`.
        #[test]
        fn behaves_as_a_vecdeque(ops in proptest::collection::vec(op(), 0..200), cut in any::<u32>()) {
            let (mut q, mut model) = (HeadInline::new(), VecDeque::new());
            for op in ops {
                match op {
                    Op::PushBack(x) => {
                        q.push_back(x);
                        model.push_back(x);
                    }
                    Op::PopFront => prop_assert_eq!(q.pop_front(), model.pop_front()),
                    Op::PopBack => prop_assert_eq!(q.pop_back(), model.pop_back()),
                    Op::Insert(i, x) => {
                        let i = i % (model.len() + 1);
                        q.insert(i, x);
                        model.insert(i, x);
                    }
                    Op::Remove(i) => {
                        let i = i % (model.len() + 1);
                        prop_assert_eq!(q.remove(i), model.remove(i));
                    }
                    Op::GetMut(i, x) => {
                        let i = i % (model.len() + 1);
                        match (q.get_mut(i), model.get_mut(i)) {
                            (Some(a), Some(b)) => {
                                *a = x;
                                *b = x;
                            }
                            (a, b) => prop_assert_eq!(a.is_none(), b.is_none()),
                        }
                    }
                }
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.is_empty(), model.is_empty());
                prop_assert_eq!(q.front(), model.front());
                prop_assert_eq!(q.back(), model.back());
                prop_assert!(q.iter().eq(model.iter()));
                for i in 0..=model.len() {
                    prop_assert_eq!(q.get(i), model.get(i));
                }
                let mut sorted: Vec<u32> = model.iter().copied().collect();
                sorted.sort_unstable();
                let sorted_q = sorted.iter().fold(HeadInline::new(), |mut s, &x| {
                    s.push_back(x);
                    s
                });
                let sorted_m: VecDeque<u32> = sorted.into();
                prop_assert_eq!(sorted_q.partition_point(|&x| x < cut), sorted_m.partition_point(|&x| x < cut));
            }
        }
    }
}
