"""Starting a process in the candidate's sandbox: the launcher, the sandbox and its confinement, memory cgroups,
and the client of the worker zygote (docs/architecture.md)."""
