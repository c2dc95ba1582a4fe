"""The data directory as jobs use it: the typed settings, the store and its ingestion, and the
job lock that keeps one job at a time per data directory and database."""
