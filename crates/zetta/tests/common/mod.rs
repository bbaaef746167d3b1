//! Shared by the integration tests: which seeds the seeded simulations run and their verdict;
//! `oracle`, OpenZFS's tools and fixtures.

#[allow(dead_code)]
pub mod oracle;
#[allow(dead_code)]
pub mod zfs_fuse;
#[allow(dead_code)]
pub mod ztest;

/// Runs `run` on seed `$<prefix>_SEED` alone if set, else on `$<prefix>_SEEDS` seeds (default
/// `default_count`) from `$<prefix>_FIRST` (default 0), so a soak can go on where another
/// stopped; stops after five failures and fails the test naming them.
/// Returns how many seeds ran.
#[allow(dead_code)]
pub fn run_seeds(
    prefix: &str,
    what: &str,
    default_count: u64,
    run: impl Fn(u64) -> Result<(), String>,
) -> usize {
    let var = |suffix: &str| -> Option<u64> {
        std::env::var(format!("{prefix}_{suffix}"))
            .ok()
            .and_then(|s| s.parse().ok())
    };
    let seeds: Vec<u64> = match var("SEED") {
        Some(seed) => vec![seed],
        None => {
            let first = var("FIRST").unwrap_or(0);
            (first..first.saturating_add(var("SEEDS").unwrap_or(default_count))).collect()
        }
    };
    let mut failures = Vec::new();
    for &seed in &seeds {
        if let Err(why) = run(seed) {
            eprintln!("{what} seed {seed} FAILED: {why}");
            failures.push(seed);
            if failures.len() >= 5 {
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "failing seeds (replay with {prefix}_SEED=n): {failures:?}"
    );
    seeds.len()
}
