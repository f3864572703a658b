"""Embed: the embedding models and the processes that run them."""
