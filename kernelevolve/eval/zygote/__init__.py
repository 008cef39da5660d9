"""The worker zygote: a process that imported torch once and forks confined workers on request (the server),
and the fork child that becomes a worker (docs/architecture.md)."""
