"""Recall: candidate fusion, the weighted score, the retriever and the injected block."""
