"""Storage layer: memory units and run records in Chroma (or in memory), one collection per namespace."""
