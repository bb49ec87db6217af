"""The experience layer: a log of what each optimization did, and what to try next.

records  (the record and its schema) · labels (canonical spellings of chips, bottlenecks,
backends, outcomes) · families (which kernels behave alike) · store (the JSONL log: ids,
locking, the curated entries) · evidence (a record's numbers read from a version folder) ·
recording (a new record from typed flags and evidence, outcome rules) · ranking (recommend) ·
query (search, list, show) · merge · summary (sync, stats).
"""
