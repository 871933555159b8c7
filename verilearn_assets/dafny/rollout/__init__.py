"""Trajectories: the writer → annotator → verifier cascade and the teachers that drive it."""
