"""What the streaming partitioners share: the seeded hash, the reduction of an edge partition
to owners, and the chunk graphs GREM builds from the edge stream."""
