"""Quotient's multilevel machinery: label-propagation coarsening, contraction of the clusters
into coarse graphs, and FM refinement at every level."""
