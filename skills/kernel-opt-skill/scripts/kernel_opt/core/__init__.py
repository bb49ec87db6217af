"""Shared by every stage: errors and exit codes, atomic files, report rendering, CLI conventions."""
