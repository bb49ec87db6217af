"""experience_log.py's subcommands, one module per group: add, browse (recommend, search, list, show),
maintenance (merge, sync, stats), and the listing they share."""
