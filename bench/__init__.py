"""adgen benchmarks: run `python -m bench --help`."""
