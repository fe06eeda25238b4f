"""What the in-memory baselines share: the CSR and imbalance rules KaMinPar and KaHIP use, and
the driver DistDGL's partitioner runs in its own environment."""
