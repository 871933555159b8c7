"""The pre-verification screen (`run`): candidates whose answer is degenerate, moves under an
unstated convention, or fails a metamorphic test are turned away before the sandbox runs."""
