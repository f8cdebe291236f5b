"""Test-only models for `dsconfig estimate --model-factory` (any torch.nn.Module)."""
