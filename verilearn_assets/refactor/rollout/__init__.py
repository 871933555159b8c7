"""Trajectories: the actor loop, its teachers, prompts, capped agent state and step queue."""
