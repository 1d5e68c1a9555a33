"""Adapters: create_agent middleware, LangGraph nodes and wrapper, classic memory."""
