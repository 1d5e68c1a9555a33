"""Reflection: trajectories distilled into memory units by an LLM and by rules."""
