"""Evaluation as a service: devices shared by many searches, scheduled per evaluation, on this machine or on a Ray
cluster (docs/cli.md, "Running on a cluster")."""
