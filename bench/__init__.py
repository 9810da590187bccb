"""Benchmarks: raypipe beside its peers and ceilings, on the same inputs and cores."""
