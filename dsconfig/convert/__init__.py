"""`dsconfig convert`: a DeepSpeed setup as an Accelerate FSDP one and back (reading, mapping, output)."""
