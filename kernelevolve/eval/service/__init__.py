"""Evaluation as a service: devices shared by many searches, scheduled per evaluation (docs/architecture.md,
"One pool, many searches"); on this machine or on a Ray cluster (docs/cli.md, "--workers")."""
