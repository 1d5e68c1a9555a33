"""The ``hindsight`` command line."""
