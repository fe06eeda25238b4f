"""The partition stage and its product: the measured run of a partitioner in a child process, the
GNN-ready step that turns owners into per-partition graphs, and the partition book on disk
(its format and the identity that names its directory)."""
