"""The per-task loop every adapter shares: serve, finish, feedback."""
