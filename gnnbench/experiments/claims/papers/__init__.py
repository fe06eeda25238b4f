"""One module per paper claim, each registering its Claim (gnnbench.experiments.claims.claim.register):
the registry imports every module here, so a new claim is one new module, no list to edit."""
