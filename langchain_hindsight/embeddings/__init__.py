"""Embedders: the offline MiniLM (ONNX), USE multilingual, and the script-routed default."""
