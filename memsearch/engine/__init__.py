"""The search engine: chunker, embedder, LanceDB store, in-memory vectors, fusion, incremental sync, the index."""
