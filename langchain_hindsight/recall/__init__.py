"""Recall: candidate fusion, the weighted score, the recall engine, the retriever and the injected block."""
