"""FSDP under Accelerate: the settings dsconfig plans, writes and converts (see settings.py)."""
