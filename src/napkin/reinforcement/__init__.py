"""Reinforcement learning: the cost of one RL cycle from its roles, and the models each holds."""
