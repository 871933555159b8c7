"""Experiment cards: a hypothesis, arms (training-config deltas), an evaluation and a typed
success criterion, run from the command line (`verilearn experiment run CARD`).

`card.py` validates a card (every arm's delta against the config models before anything
trains), `runner.py` trains and evaluates each arm (resumable per stage), `summary.py`
turns the arms' evaluation records into pass@k tables with bootstrap intervals and the
verdict on the criterion. Pure of Dagster: the CLI adds the gate check.
"""
