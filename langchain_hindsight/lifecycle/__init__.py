"""Lifecycle: decay, archive, merge, review and usage reports."""
