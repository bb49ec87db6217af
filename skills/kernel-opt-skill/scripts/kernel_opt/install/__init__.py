"""Putting the skill where an agent looks for it, and taking exactly that away again (skill.py)."""
