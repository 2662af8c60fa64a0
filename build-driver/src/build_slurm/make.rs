//! Make's progress estimate: the previous build's count of compile and link steps, else the
//! number of C files under `src/` (the runs themselves: [`driver_common::util::process::logged`]).

use driver_common::util::process::logged::count_steps;
use std::path::Path;

/// The progress estimate: the step count of a previous log if there is one, else the number
/// of `.c` files under `<src>/src`.
pub fn estimate(previous_log: &Path, src: &Path) -> u64 {
    if let Ok(bytes) = std::fs::read(previous_log) {
        let n = count_steps(&String::from_utf8_lossy(&bytes));
        if n > 0 {
            return n;
        }
    }
    fn count_c(dir: &Path) -> u64 {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return 0;
        };
        rd.filter_map(|e| e.ok())
            .map(|e| {
                let p = e.path();
                if p.is_dir() {
                    count_c(&p)
                } else {
                    u64::from(p.extension().is_some_and(|x| x == "c"))
                }
            })
            .sum()
    }
    count_c(&src.join("src")).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate__previous_log_wins_over_c_file_count() {
        let (d, src) = crate::testing::scratch("src");
        for f in ["a.c", "b.c", "c.h"] {
            crate::testing::write(&src.join("src/common").join(f), "");
        }
        let log = d.path().join("make.log");
        assert_eq!(estimate(&log, &src), 2);
        std::fs::write(&log, "  CC a.lo\n  CC b.lo\n  CCLD x.la\nMaking all\n").unwrap();
        assert_eq!(estimate(&log, &src), 3);
    }
}
