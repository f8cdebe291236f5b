"""One module per `dsconfig` subcommand."""
