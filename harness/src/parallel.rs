//! Work spread over the machine's CPUs, its results in the input's order:
//! for the CPU-only parts of a run (parsing scenario files, the model),
//! which would otherwise leave every core but one idle.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` of each of `items`, in their order, on up to one thread per CPU
/// (`std::thread::available_parallelism`), each thread taking the next
/// item not taken yet, so one costly item does not hold up the others'
/// share. Always on threads of its own, even for one item: the caller may
/// be driving an async runtime and `f` may start one (the model's
/// checks). A panic in `f` is resumed on the caller's thread once every
/// thread has stopped.
pub fn map_in_order<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len());
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { return mine };
                        mine.push((i, f(item)));
                    }
                })
            })
            .collect();
        let joined: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        let mut all = Vec::with_capacity(items.len());
        for j in joined {
            match j {
                Ok(mine) => all.extend(mine),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_the_items_order_whatever_each_costs() {
        // Early items cost the most, so later ones finish first.
        let items: Vec<u64> = (0..64).collect();
        let out = map_in_order(&items, |&i| {
            let mut x = 0u64;
            for k in 0..(64 - i) * 2_000 {
                x = x.wrapping_add(k ^ i);
            }
            std::hint::black_box(x);
            i * 10
        });
        assert_eq!(out, items.iter().map(|i| i * 10).collect::<Vec<_>>());
        assert!(map_in_order(&[] as &[u8], |_| 1).is_empty());
        assert_eq!(map_in_order(&[7], |&i| i + 1), [8]);
        // One item inside a runtime, starting one of its own.
        let inside = tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
            map_in_order(&[1], |&i| {
                tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async move { i + 1 })
            })
        });
        assert_eq!(inside, [2]);
    }

    #[test]
    fn a_panic_reaches_the_caller() {
        let items: Vec<u32> = (0..16).collect();
        let caught =
            std::panic::catch_unwind(|| map_in_order(&items, |&i| if i == 9 { panic!("item nine") } else { i }));
        let payload = caught.expect_err("the panic is resumed");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"item nine"));
    }
}
