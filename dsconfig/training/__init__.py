"""Training projects beyond DeepSpeed's own files: how a framework's loop iterates an epoch
(`epochs`), batch sizes in a project's training configs (`configs`), and training scripts read
statically (`scripts`)."""
