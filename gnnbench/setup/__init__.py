"""Installers: the environments the in-memory METIS baselines need (`python -m gnnbench setup`)."""
