"""dsconfig: lint and generate DeepSpeed and Hugging Face Accelerate training configs."""

__version__ = "0.1.0"
