"""How a project starts training: its launch scripts read statically (shell), the launcher commands in them
(launchers, argv), the TrainingArguments their flags give (trainer_flags), and the configs each launch hands
to training (project). Only this constant is imported on every lint: the rest when a launch script is linted."""

# shell and SLURM batch scripts by suffix; Makefiles by name (their recipes, dsconfig.launch.makefile)
LAUNCH_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch", "Makefile", "makefile", "GNUmakefile")
