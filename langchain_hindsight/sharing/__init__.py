"""Sharing: principals, grants, scoped memory, and the MCP server."""
