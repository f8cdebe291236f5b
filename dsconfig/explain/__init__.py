"""`dsconfig explain`: the config DeepSpeed finally receives, and where each value came from."""
