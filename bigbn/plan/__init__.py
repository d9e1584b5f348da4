"""Lattice arithmetic: the chunk lattice, every task's reads and writes, tiers."""
