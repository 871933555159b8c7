"""The refactor family: ast-grep refactoring tasks run in a jail, verified SRL trajectories."""
