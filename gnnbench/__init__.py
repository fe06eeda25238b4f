"""gnnbench: benchmark and track distributed GNN training on partitioned graphs."""

__version__ = "0.1.0"
