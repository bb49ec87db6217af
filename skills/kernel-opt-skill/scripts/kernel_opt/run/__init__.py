"""The child process a solution runs in: its event log and the parent that watches it."""
