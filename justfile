# reapcheck tasks. CI does not use just (.ci/run calls cargo directly).
# Targets read their databases from REAPCHECK_<TARGET>_URL; see README.md.

# Every scenario on every target; unreachable targets are reported skipped.
matrix:
    cargo run --release -- run --db all --report reports

# Every scenario on one target: `just db postgres`.
db target:
    cargo run -- run --db {{target}}

# The test suite (one test per scenario and target, plus unit tests).
test:
    cargo test

# Validate scenarios and dialects without running anything.
check:
    cargo run -- check

# The mutation self-test: `just mutate sqlite,postgres,mariadb`.
mutate targets="sqlite":
    cargo run --release -- mutate --db {{targets}}

# Where a scenario run's time goes, per target: `just bench sqlite,postgres`.
bench targets="sqlite":
    cargo run --release -- bench --db {{targets}}

# The reaper's scan at 10k, 100k and 1M rows, with its plans: `just scale postgres`.
scale targets="sqlite":
    cargo run --release -- bench --scale --db {{targets}}

# Generated scenarios on the model and targets: `just fuzz sqlite,postgres 2000`.
fuzz targets="sqlite" cases="1000":
    cargo run --release -- fuzz --db {{targets}} --cases {{cases}}
