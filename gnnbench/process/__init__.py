"""Process utilities below every stage: atomic writes and stale temporaries (`atomic`), workers'
start, stop and failure (`lifecycle`), memory caps and out-of-memory evidence (`memory_limit`),
resident peaks (`peak_rss`) and torchrun's environment (`torchrun`). They import no stage."""
