//! Large tables in 2 MB pages: a `Vec` that grows past 2 MB is moved into memory the kernel is
//! asked to back with transparent huge pages, so that state looked up at random (Snoop's connection slots
//! under 100,000 connections) costs no page-table walk per lookup.
//!
//! Advice only: where the kernel has transparent huge pages off, or off Linux, nothing changes but where
//! the bytes are. Linux's default (`/sys/kernel/mm/transparent_hugepage/enabled` = `madvise`) gives huge
//! pages only to memory advised with `MADV_HUGEPAGE`, which `std` cannot do, hence `libc::madvise`.

/// Below this size a table stays where `Vec`'s own growth puts it: one 2 MB page is the least that helps.
const HUGE: usize = 2 << 20;

/// Pushes `value`, and when `v` is full and its next capacity reaches [`HUGE`] bytes, grows it by moving its
/// elements into a new allocation advised for huge pages before any of it is touched (pages already faulted
/// in at 4 KB stay so; `realloc` would keep them).
pub fn push<T>(v: &mut Vec<T>, value: T) {
    if v.len() == v.capacity() {
        let cap = (v.capacity() * 2).max(4);
        let bytes = cap.saturating_mul(std::mem::size_of::<T>());
        if bytes >= HUGE {
            let mut grown: Vec<T> = Vec::with_capacity(cap);
            advise(grown.as_ptr().cast(), bytes);
            grown.append(v);
            *v = grown;
        }
    }
    v.push(value);
}

/// Asks for huge pages on the whole 4 KB pages inside `len` bytes at `start`.
fn advise(start: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let from = (start as usize).next_multiple_of(PAGE);
        let to = (start as usize + len) / PAGE * PAGE;
        if to > from {
            // SAFETY: the range lies inside one live allocation of ours; MADV_HUGEPAGE changes how it is
            // backed, never its contents, and a failure (no THP in this kernel) leaves it as it was.
            unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_grown_past_the_threshold_keeps_its_elements_in_order() {
        let mut v: Vec<[u64; 8]> = Vec::new();
        let n = 3 * HUGE / std::mem::size_of::<[u64; 8]>();
        for i in 0..n {
            push(&mut v, [i as u64; 8]);
        }
        assert_eq!(v.len(), n);
        assert!(v.iter().enumerate().all(|(i, e)| e.iter().all(|&x| x == i as u64)));
        assert!(v.capacity() * std::mem::size_of::<[u64; 8]>() >= 2 * HUGE, "grown past the threshold");
    }

    #[test]
    fn a_huge_allocation_is_advised_on_linux() {
        let mut v: Vec<u8> = Vec::with_capacity(0);
        for _ in 0..HUGE + 1 {
            push(&mut v, 1);
        }
        // A kernel built without transparent huge pages refuses the advice (and has no such directory).
        #[cfg(target_os = "linux")]
        if std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            // The advice shows as the `hg` flag of the allocation's mapping.
            let start = v.as_ptr() as usize;
            let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
            // A mapping's header line starts with its address range, `start-end` in hex.
            let range = |line: &str| {
                let (a, b) = line.split_once(' ')?.0.split_once('-')?;
                Some(usize::from_str_radix(a, 16).ok()?..usize::from_str_radix(b, 16).ok()?)
            };
            let mut inside = false;
            let mut advised = false;
            for line in smaps.lines() {
                match range(line) {
                    Some(r) => inside = r.contains(&start.next_multiple_of(4096)),
                    None if inside && line.starts_with("VmFlags:") => {
                        advised = line.split_whitespace().any(|f| f == "hg")
                    }
                    None => {}
                }
            }
            assert!(advised, "the mapping holding a {} byte table is advised for huge pages", v.capacity());
        }
    }
}
