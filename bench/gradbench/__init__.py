"""GradBench's C++ programs for Enzyme, built unchanged with `adgen c++`: `python -m bench.gradbench --help`."""
