"""The memory service: the watcher API and the indexing daemon that keeps one index fresh."""
