"""Harness integration: the memory tools, the harness search() entry point and the MCP server."""
