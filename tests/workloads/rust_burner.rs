// rust_burner.rs — test workload for Rust demangling: its CPU goes to rust_burner::shop::hot_loop.
// Not built by make (rustc is not a build dependency): tests/e2e/t_symbols.sh compiles it, with
// legacy and with v0 symbol mangling, when rustc is installed. Runs until killed.
mod shop {
    #[inline(never)]
    pub fn hot_loop(buf: &[u8]) -> u64 {
        let mut h: u64 = 1469598103934665603;
        for _ in 0..64 {
            for &b in buf {
                h = (h ^ b as u64).wrapping_mul(1099511628211);
            }
        }
        h
    }
}

fn main() {
    let buf = vec![7u8; 4096];
    let mut s = 0u64;
    loop {
        s = s.wrapping_add(shop::hot_loop(std::hint::black_box(&buf)));
        std::hint::black_box(s);
    }
}
