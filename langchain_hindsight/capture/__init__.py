"""Capture: trajectories recorded from callback events and from message lists."""
