"""memlife's benchmarks: `./scripts/bench` measures and writes BENCHMARKS.md."""
