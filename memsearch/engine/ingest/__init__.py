"""Ingest: Markdown files into chunks, batches and incremental syncs."""
